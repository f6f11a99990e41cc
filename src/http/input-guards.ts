import type { Ajv } from 'ajv';
import type { FastifyBodyParser, FastifyRequest } from 'fastify';
import { MAX_BODY_DEPTH, isStorableText } from '../domain/bounds.ts';
import { invalid, type FieldProblem } from '../domain/errors.ts';
import { isObject } from '../domain/json.ts';
import { compileQueryLists } from './query-lists.ts';
import type { AjvIssue } from './validation.ts';

// Checks every request passes before its schema: they bound the work a hostile request can cause (nesting,
// array sizes) and keep out what the dialects cannot store alike (NUL, lone surrogates). The verification
// lane uses the same two functions as Fastify, so both paths answer alike.

/** A body or query validator: true, or the problems in Ajv's shape (what Fastify's validator compiler may return). */
export type Validate = (data: unknown) => true | { error: Issue[] };

type Issue = AjvIssue & { schemaPath: string };

/** JSON text of a `\u0000` or a surrogate escape: the only ways a NUL or a lone surrogate can enter a parsed body. */
const SUSPICIOUS_ESCAPE = /\\u(?:0000|[dD][89a-fA-F])/;

/**
 * Wraps Fastify's own JSON parser (same poisoning rules and errors): a body nested deeper than
 * MAX_BODY_DEPTH is refused before it is parsed, and one with a string (or member name) holding NUL or a
 * lone surrogate after; both are a 400 listing the paths.
 */
export function guardedJsonParser(parse: FastifyBodyParser<string>): FastifyBodyParser<string> {
  return (request, text, done) => {
    if (nestsDeeperThan(text, MAX_BODY_DEPTH)) {
      done(invalid([{ path: '/', message: `nests objects and arrays more than ${MAX_BODY_DEPTH} levels deep` }]), undefined);
      return;
    }
    parse(request, text, (err, value) => {
      if (err) return done(err, undefined);
      const problems = SUSPICIOUS_ESCAPE.test(text) ? textProblems(value, '') : [];
      if (problems.length) return done(invalid(problems), undefined);
      done(null, value);
    });
  };
}

/** Parses with a (callback-style, synchronous) body parser: returns the value or throws its error. */
export function parseWith(parse: FastifyBodyParser<string>, text: string): unknown {
  let failure: Error | null = null;
  let body: unknown;
  // Fastify's parser calls back synchronously and never looks at its request argument.
  parse(undefined as unknown as FastifyRequest, text, (err, parsed) => {
    failure = err;
    body = parsed;
  });
  if (failure) throw failure;
  return body;
}

/** Whether JSON text opens more than `max` nested objects/arrays; one pass, strings skipped. */
function nestsDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92)
        i++; // a backslash escapes the next character
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 || c === 91) {
      if (++depth > max) return true;
    } else if (c === 125 || c === 93) depth--;
  }
  return false;
}

const pointer = (path: string, member: string) => `${path}/${member.replaceAll('~', '~0').replaceAll('/', '~1')}`;
const TEXT_MESSAGE = 'must not contain NUL or a lone surrogate (U+D800–U+DFFF)';

/** Every string (and member name) of a parsed value that cannot be stored alike on both dialects. */
function textProblems(value: unknown, path: string): FieldProblem[] {
  if (typeof value === 'string') return isStorableText(value) ? [] : [{ path: path || '/', message: TEXT_MESSAGE }];
  if (Array.isArray(value)) return value.flatMap((v, i) => textProblems(v, `${path}/${i}`));
  if (!isObject(value)) return [];
  return Object.entries(value).flatMap(([k, v]) =>
    isStorableText(k) ? textProblems(v, pointer(path, k)) : [{ path: pointer(path, k), message: `member name ${TEXT_MESSAGE}` }],
  );
}

interface SchemaNode {
  maxItems?: number;
  items?: SchemaNode;
  properties?: Record<string, SchemaNode>;
}

type ArrayGuard = (data: unknown, path: string, out: Issue[]) => void;

/**
 * The check, compiled once per schema, of arrays longer than their `maxItems`, run before any item is
 * validated (so a huge array costs one comparison). It visits only the members that lead to an array;
 * undefined when the schema has none.
 */
function compileArrayGuard(schema: SchemaNode | undefined): ArrayGuard | undefined {
  if (!schema) return undefined;
  if (schema.maxItems !== undefined || schema.items) {
    const { maxItems } = schema;
    const items = compileArrayGuard(schema.items);
    return (data, path, out) => {
      if (!Array.isArray(data)) return;
      if (maxItems !== undefined && data.length > maxItems) {
        out.push({
          instancePath: path,
          schemaPath: '',
          keyword: 'maxItems',
          params: { limit: maxItems },
          message: `must NOT have more than ${maxItems} items`,
        });
      } else if (items) {
        for (let i = 0; i < data.length; i++) items(data[i], `${path}/${i}`, out);
      }
    };
  }
  const members = Object.entries(schema.properties ?? {}).flatMap(([member, sub]) => {
    const guard = compileArrayGuard(sub);
    return guard ? [[member, guard] as const] : [];
  });
  if (members.length === 0) return undefined;
  return (data, path, out) => {
    if (!isObject(data)) return;
    for (const [member, guard] of members) if (member in data) guard(data[member], `${path}/${member}`, out);
  };
}

/** One problem per query parameter any of whose values (a repeated parameter has several) is `bad`. */
function queryIssues(query: unknown, bad: (value: unknown) => boolean, keyword: string, message: string): Issue[] {
  if (!isObject(query)) return [];
  return Object.entries(query).flatMap(([name, v]) =>
    [v].flat().some(bad) ? [{ instancePath: `/${name}`, schemaPath: '', keyword, params: {}, message }] : [],
  );
}

/** Query values are strings: NUL can arrive percent-encoded (a lone surrogate cannot: invalid UTF-8 decodes to U+FFFD). */
const queryTextIssues = (query: unknown) => queryIssues(query, (v) => typeof v === 'string' && !isStorableText(v), 'text', TEXT_MESSAGE);

/**
 * Query values Ajv coerced to Infinity ("Infinity", "1e400"): its coercion passes them without the bounds
 * checks a parsed number gets, so they are refused here.
 */
const nonFiniteNumbers = (query: unknown) =>
  queryIssues(query, (v) => typeof v === 'number' && !Number.isFinite(v), 'type', 'must be a finite number');

/**
 * The validator of a body or query schema: a query's list parameters split (query-lists.ts), then array
 * sizes (and query text), then the schema itself. Ajv's context argument is passed through (with
 * `schemaEnv`, Fastify gives it the parent of the validated part, so defaults and coercions may replace the
 * root value).
 */
export function guardedValidator(ajv: Ajv, schema: object, part: 'body' | 'query'): Validate {
  const validate = ajv.compile(schema);
  const arrays = compileArrayGuard(schema as SchemaNode);
  const lists = part === 'query' ? compileQueryLists(schema) : undefined;
  const guarded = (data: unknown, context?: object) => {
    lists?.(data);
    const early: Issue[] = part === 'query' ? queryTextIssues(data) : [];
    arrays?.(data, '', early);
    if (early.length) return { error: early };
    // biome-ignore lint/suspicious/noExplicitAny: Ajv's context type is internal to it
    if (!validate(data, context as any)) return { error: (validate.errors ?? []) as Issue[] };
    const coercedToInfinity = part === 'query' ? nonFiniteNumbers(data) : [];
    return coercedToInfinity.length ? { error: coercedToInfinity } : (true as const);
  };
  return Object.assign(guarded, { schemaEnv: validate.schemaEnv });
}
