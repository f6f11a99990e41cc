import fc from 'fast-check';
import { Members, Raw } from './json-text.ts';

/**
 * Hostile inputs, by where they go: a leaf of a JSON body (numbers, strings, wrong types, deep nesting, huge
 * arrays), an object (missing, unknown, forbidden or repeated members), a whole body (malformed JSON, not an
 * object, too large), a Content-Type, a method, a query value. The big ones are built once, here.
 */

const N_DEEP = 10_000;
const N_HUGE = 100_000;
const LONG = 100_000;

const repeatJoin = (item: string, n: number) => `[${new Array(n).fill(item).join(',')}]`;

/** Numbers as raw JSON text: beyond 2^53, beyond int64, beyond double (1e400 parses as Infinity), negative, fractional. */
export const NUMBERS: Raw[] = [
  '1e308',
  '-1e308',
  '1e400',
  '-1e400',
  '9007199254740992',
  '9007199254740993',
  '9223372036854775807',
  '9223372036854775808',
  '-9223372036854775809',
  '18446744073709551616',
  '123456789012345678901234567890',
  '-1',
  '0',
  '-0',
  '0.5',
  '1.0',
  '1e-400',
  '2147483648',
  '4294967296',
  '1E3',
].map((t) => new Raw(t));

/** Strings: NUL, lone surrogates (as JSON escapes, which is how they arrive), very long, unicode, injection-shaped. */
export const STRINGS: unknown[] = [
  'a\u0000b',
  '\u0000',
  new Raw('"\\ud800"'),
  new Raw('"a\\udfffb"'),
  new Raw('"\\udc00\\ud800"'),
  new Raw(`"${'x'.repeat(LONG)}"`, `"x" × ${LONG}`),
  new Raw(`"${'\\u0000'.repeat(1000)}"`, 'NUL × 1000'),
  '🔑'.repeat(1000),
  'e\u0301\u0301\u0301',
  '\u202eevil',
  '\ufeffbom',
  '\u200b',
  '',
  ' ',
  '%00',
  "' OR 1=1 --",
  '../../etc/passwd',
  '<script>alert(1)</script>',
  '\r\n\t',
  '__proto__',
  'api_1111111111111111111111',
  '*',
];

/** Values of the wrong type for almost any member. */
export const WRONG_TYPES: unknown[] = [null, true, false, 0, -1, 1.5, '', 'x', [], [null], {}, { a: 1 }];

/** 10,000 levels: of objects (meta), of arrays, and of permission queries ({"and":[…]}). */
export const DEEP: Raw[] = [
  new Raw(`${'{"a":'.repeat(N_DEEP)}1${'}'.repeat(N_DEEP)}`, `{"a":…} × ${N_DEEP}`),
  new Raw(`${'['.repeat(N_DEEP)}${']'.repeat(N_DEEP)}`, `[…] × ${N_DEEP}`),
  new Raw(`${'{"and":['.repeat(N_DEEP / 2)}"p"${']}'.repeat(N_DEEP / 2)}`, `{"and":[…]} × ${N_DEEP / 2}`),
];

/** 100,000 items: strings, numbers, objects, nulls. */
export const HUGE_ARRAYS: Raw[] = [
  new Raw(repeatJoin('"x"', N_HUGE), `["x"] × ${N_HUGE}`),
  new Raw(repeatJoin('1', N_HUGE), `[1] × ${N_HUGE}`),
  new Raw(repeatJoin('{}', N_HUGE), `[{}] × ${N_HUGE}`),
  new Raw(repeatJoin('null', N_HUGE), `[null] × ${N_HUGE}`),
];

/** An object with 100,000 members. */
export const HUGE_OBJECT = new Raw(`{${Array.from({ length: N_HUGE }, (_, i) => `"m${i}":${i}`).join(',')}}`, `{m0…m${N_HUGE - 1}}`);

const any = (xs: unknown[]) => fc.constantFrom(...xs);
const isHeavy = (v: unknown) => v instanceof Raw && v.text.length > 10_000;
const HEAVY: unknown[] = [...STRINGS.filter(isHeavy), ...DEEP, ...HUGE_ARRAYS, HUGE_OBJECT];

/**
 * A hostile leaf for a member whose schema has `types` (none: free-form): mostly cheap ones of its own type
 * (numbers for numbers, strings for strings) or of another type, now and then a heavy one (deep, huge, long),
 * so that a run's time goes to many requests rather than to parsing a few big ones.
 */
export function hostileLeaf(types: string[]): fc.Arbitrary<unknown> {
  const numeric = types.includes('integer') || types.includes('number');
  const text = types.includes('string');
  const cheapStrings = STRINGS.filter((v) => !isHeavy(v));
  const own = [...(numeric || !text ? NUMBERS : []), ...(text || !numeric ? cheapStrings : [])];
  const ownHeavy = [
    ...(types.includes('array') ? HUGE_ARRAYS : []),
    ...(types.includes('object') || !types.length ? [...DEEP, HUGE_OBJECT] : []),
    ...(text ? STRINGS.filter(isHeavy) : []),
  ];
  return fc.oneof(
    { weight: 5, arbitrary: any(own) },
    { weight: 3, arbitrary: any(WRONG_TYPES) },
    { weight: 1, arbitrary: any(HEAVY) },
    ...(ownHeavy.length ? [{ weight: 2, arbitrary: any(ownHeavy) }] : []),
  );
}

const FORBIDDEN_NAMES = ['__proto__', 'constructor', 'prototype'];

/** An object of `valid`, mutated: a member missing, an unknown, forbidden (`not: {}`) or repeated one, or all gone. */
export function hostileObject(valid: fc.Arbitrary<unknown>, declared: string[]): fc.Arbitrary<unknown> {
  const entriesOf = (o: unknown): Array<[string, unknown]> =>
    o !== null && typeof o === 'object' && !Array.isArray(o) ? Object.entries(o).filter(([, v]) => v !== undefined) : [];
  const leaf = fc.oneof(any(WRONG_TYPES), fc.jsonValue({ maxDepth: 2 }));
  const names = fc.oneof(fc.constantFrom(...declared, ...FORBIDDEN_NAMES), fc.string({ maxLength: 12 }));
  return fc.oneof(
    fc.tuple(valid, fc.nat()).map(([o, i]) => {
      const e = entriesOf(o);
      e.splice(i % Math.max(e.length, 1), 1);
      return new Members(e);
    }),
    fc.tuple(valid, names, leaf).map(([o, k, v]) => new Members([...entriesOf(o), [k, v]])),
    fc.tuple(valid, fc.nat(), leaf, fc.boolean()).map(([o, i, v, first]) => {
      const e = entriesOf(o);
      if (!e.length)
        return new Members([
          ['a', 1],
          ['a', v],
        ]);
      const dup: [string, unknown] = [e[i % e.length][0], v];
      return new Members(first ? [dup, ...e] : [...e, dup]);
    }),
    fc.constant({}),
  );
}

/** Whole bodies that are not JSON, or not an object. */
export const MALFORMED_BODIES: string[] = [
  '',
  ' ',
  '{',
  '}',
  '{"a":',
  '{"a":1,}',
  "{'a':1}",
  '{a:1}',
  '[1,2',
  'nul',
  'NaN',
  '{"a":NaN}',
  '{"a":Infinity}',
  '\ufeff{}',
  '{}garbage',
  '{"a":"\\x41"}',
  '{"a":"\\u12"}',
  '"unterminated',
  '{"a" 1}',
  '//c\n{}',
  '{"a":1}{"b":2}',
  '\u0000',
  '{"a":01}',
  '{"a":.5}',
  '{"a":+1}',
  '{"a":0x10}',
  '{"__proto__":{"x":1}}',
  '{"constructor":{"prototype":{"x":1}}}',
  'null',
  'true',
  '123',
  '"x"',
  '[]',
  '[{}]',
  '\xff\xfe{\x00}\x00',
];

/** Content-Types other than application/json (or variants of it). undefined: no Content-Type at all. */
export const CONTENT_TYPES: Array<string | undefined> = [
  undefined,
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/xml',
  'application/json; charset=utf-16',
  'application/json; charset=latin1',
  'APPLICATION/JSON',
  'application/json;',
  'application/jsonx',
  'application/*',
  '*/*',
  '',
  'application/json, text/plain',
  'application/vnd.api+json',
];

export const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

/** A body just over the 5 MiB limit (valid JSON). */
export const TOO_LARGE = new Raw(`{"x":"${'x'.repeat(5 * 1024 * 1024)}"}`, 'a 5 MiB + 9 byte body');

/** Query values as raw, already percent-encoded text: NUL, invalid UTF-8 and percent-encoding, long, numbers out of range. */
export const QUERY_VALUES: Raw[] = [
  '%00',
  'a%00b',
  '%ED%A0%80',
  '%C0%80',
  '%FF',
  '%E0%A4%A',
  '%',
  '%%',
  '%zz',
  'x'.repeat(LONG),
  '1e400',
  '1e308',
  '9007199254740993',
  '9223372036854775808',
  '-1',
  '-0',
  'NaN',
  'Infinity',
  '0x10',
  '1.5',
  '',
  '+1',
  '%20',
  'true',
  'null',
  '%F0%9F%94%91',
  '%E2%80%AE',
  'a&b',
  '[]',
  '{}',
  '%5B%5D',
].map((t) => new Raw(t, t.length > 40 ? `x × ${t.length}` : t));

/** Query names a route does not declare, some with meaning elsewhere (qs brackets, prototype). */
export const QUERY_NAMES = ['__proto__', 'constructor', 'x', 'limit[]', 'a[b]', '', '%00', 'apiId%5B%5D'];
