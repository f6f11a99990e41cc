import fc from 'fast-check';
import { jsonText, Raw, SeedRef, type Resolve } from './json-text.ts';
import {
  CONTENT_TYPES,
  DEEP,
  HUGE_ARRAYS,
  MALFORMED_BODIES,
  METHODS,
  NUMBERS,
  QUERY_NAMES,
  QUERY_VALUES,
  STRINGS,
  TOO_LARGE,
  WRONG_TYPES,
} from './hostile.ts';
import { unsupported, arbitraryOf, type Schema } from './schema.ts';

/**
 * The requests of the fuzz, derived from the OpenAPI document: one arbitrary per operation, mixing
 * valid-looking requests (drawn from the operation's body or query schema, naming seeded resources) with
 * hostile ones. The one place both the test (routes.test.ts) and the long mode (run.ts) take them from.
 */

export interface Param {
  name: string;
  required: boolean;
  schema: Schema;
}

export interface Operation {
  method: 'GET' | 'POST';
  path: string;
  /** The JSON body's schema (POST). */
  body?: Schema;
  query: Param[];
  /** Called without a root key (liveness, keys.verifyKey). */
  isPublic: boolean;
}

interface OpenApiOperation {
  requestBody?: { content?: Record<string, { schema: Schema }> };
  parameters?: Array<{ in: string; name: string; required?: boolean; schema: Schema }>;
  security?: unknown[];
}
export interface OpenApiDocument {
  paths: Record<string, Record<string, OpenApiOperation>>;
}

/** Every operation of the document. Fails for one whose body is not JSON or whose schema uses a keyword the generator does not know. */
export function operationsOf(doc: OpenApiDocument): Operation[] {
  const ops: Operation[] = [];
  for (const [path, methods] of Object.entries(doc.paths))
    for (const [method, o] of Object.entries(methods)) {
      const content = o.requestBody?.content ?? {};
      const other = Object.keys(content).filter((t) => t !== 'application/json');
      if (other.length) throw new Error(`${method} ${path}: no generator for request bodies of ${other.join(', ')}`);
      const params = o.parameters ?? [];
      const notQuery = params.filter((p) => p.in !== 'query');
      if (notQuery.length)
        throw new Error(`${method} ${path}: no generator for ${notQuery.map((p) => `${p.in} parameter ${p.name}`).join(', ')}`);
      const body = content['application/json']?.schema;
      const problems = [...(body ? unsupported(body) : []), ...params.flatMap((p) => unsupported(p.schema, `?${p.name}`))];
      if (problems.length) throw new Error(`${method} ${path}: no generator for schema keywords ${problems.join(', ')}`);
      ops.push({
        method: method.toUpperCase() as 'GET' | 'POST',
        path,
        body,
        query: params.map((p) => ({ name: p.name, required: p.required === true, schema: p.schema })),
        // A public operation's security is `[]` (no scheme): the document's root-key default does not apply.
        isPublic: o.security !== undefined && o.security.length === 0,
      });
    }
  return ops;
}

/** One generated request, before its SeedRefs are resolved. `kind` says how it was made (counted by the long mode). */
export interface FuzzRequest {
  kind: string;
  method: string;
  path: string;
  /** The Content-Type header: undefined → application/json when there is a body; null → none. */
  contentType?: string | null;
  /** A generated JSON value (json-text.ts leaves allowed). */
  body?: unknown;
  /** A raw body, sent as is. */
  text?: string;
  /** Query pairs; a Raw name or value is already percent-encoded text. */
  query?: Array<[string | Raw, unknown]>;
}

/** How requests are drawn: `seeded` is how often a member naming a resource names a seeded one (0..1). */
export interface Mix {
  seeded: number;
  /** Only valid-looking requests (the isolation suite). */
  validOnly?: boolean;
}

/** The arbitrary of the requests of one operation. */
export function requestsFor(op: Operation, mix: Mix): fc.Arbitrary<FuzzRequest> {
  const valid = op.method === 'GET' ? getRequest(op, mix, 0) : postRequest(op, mix, 0);
  if (mix.validOnly) return valid;
  const leaves = op.method === 'GET' ? getRequest(op, mix, 0.15) : postRequest(op, mix, 0.15);
  const base = { method: op.method, path: op.path };
  const withBody = (kind: string, body: unknown) => ({ ...base, kind, body });
  return fc.oneof(
    { weight: 16, arbitrary: valid },
    { weight: 14, arbitrary: leaves },
    { weight: 2, arbitrary: fc.constantFrom(...MALFORMED_BODIES).map((text) => ({ ...base, kind: 'malformed', text })) },
    {
      weight: 2,
      arbitrary: fc.tuple(valid, fc.constantFrom(...CONTENT_TYPES)).map(([r, t]) => ({
        ...r,
        kind: 'content-type',
        contentType: t ?? null,
        body: r.body ?? {},
      })),
    },
    { weight: 2, arbitrary: fc.tuple(valid, fc.constantFrom(...METHODS)).map(([r, method]) => ({ ...r, kind: 'method', method })) },
    { weight: 3, arbitrary: fc.constantFrom(...DEEP, ...HUGE_ARRAYS, ...NUMBERS, ...WRONG_TYPES).map((b) => withBody('root', b)) },
    { weight: 1, arbitrary: fc.constant(withBody('too-large', TOO_LARGE)) },
  );
}

function postRequest(op: Operation, mix: Mix, hostile: number): fc.Arbitrary<FuzzRequest> {
  const kind = hostile ? 'hostile-body' : 'valid';
  const body = op.body ? arbitraryOf(op.body, { name: '' }, { hostile, seeded: mix.seeded }) : fc.constant(undefined);
  return body.map((b) => ({ kind, method: op.method, path: op.path, body: b }));
}

/** Query strings: the declared parameters, hostile ones with raw values, missing required ones, unknown or repeated names. */
function getRequest(op: Operation, mix: Mix, hostile: number): fc.Arbitrary<FuzzRequest> {
  const rawValues = [...QUERY_VALUES, ...NUMBERS, ...STRINGS.filter((s) => typeof s === 'string')];
  const pairs = op.query.map((p) => {
    let value: fc.Arbitrary<unknown> = arbitraryOf(p.schema, { name: p.name }, { hostile: 0, seeded: mix.seeded });
    if (hostile) value = fc.oneof({ weight: 4, arbitrary: value }, { weight: 1, arbitrary: fc.constantFrom(...rawValues) });
    const pair = value.map((v): Array<[string, unknown]> => (Array.isArray(v) ? v.map((x) => [p.name, x]) : [[p.name, v]]));
    return p.required && !hostile ? pair : fc.option(pair, { nil: [] as Array<[string, unknown]>, freq: p.required ? 8 : 2 });
  });
  const query = fc.tuple(...pairs).map((ps) => ps.flat());
  if (hostile) {
    const extra = fc.array(fc.tuple(fc.constantFrom(...QUERY_NAMES, ...op.query.map((p) => p.name)), fc.constantFrom(...rawValues)), {
      maxLength: 2,
    });
    return fc.tuple(query, extra).map(([q, e]) => ({
      kind: 'hostile-query',
      method: op.method,
      path: op.path,
      query: [...q, ...e.map(([n, v]) => [new Raw(n), v] as [Raw, unknown])],
    }));
  }
  return query.map((q) => ({ kind: 'valid', method: op.method, path: op.path, query: q }));
}

/** A request as app.inject (or an HTTP client) takes it. */
export interface Rendered {
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string;
}

/** `s` percent-encoded (as UTF-8 bytes when it holds a lone surrogate, which becomes U+FFFD as any encoder sends it). */
const pct = (s: string) =>
  s.isWellFormed() ? encodeURIComponent(s) : [...Buffer.from(s, 'utf8')].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');
const queryText = (v: unknown, resolve: Resolve): string => {
  if (v instanceof Raw) return v.text;
  if (v instanceof SeedRef) return pct(resolve(v));
  return pct(typeof v === 'string' ? v : JSON.stringify(v));
};

/** The request to send: SeedRefs resolved, the body as JSON text, `key` as the root key (none when null). */
export function render(r: FuzzRequest, resolve: Resolve, key: string | null): Rendered {
  const headers: Record<string, string> = {};
  if (key) headers.authorization = `Bearer ${key}`;
  const payload = r.text ?? (r.body === undefined ? undefined : jsonText(r.body, resolve));
  const contentType = r.contentType === undefined ? (payload === undefined ? null : 'application/json') : r.contentType;
  if (contentType !== null) headers['content-type'] = contentType;
  const qs = (r.query ?? []).map(([n, v]) => `${n instanceof Raw ? n.text : pct(n)}=${queryText(v, resolve)}`).join('&');
  return { method: r.method, url: qs ? `${r.path}?${qs}` : r.path, headers, payload };
}
