import fc from 'fast-check';
import { SeedRef, type Seeds } from './json-text.ts';
import { analyticsQuery } from './analytics-sql.ts';
import { hostileLeaf, hostileObject } from './hostile.ts';

/**
 * JSON Schema (as the OpenAPI document has it) → fast-check arbitrary of values. Valid-looking values are
 * drawn from the schema (types, bounds, enums, required members); members whose name says they refer to a
 * resource (`apiId`, `keyId`, a role's `id`, …) are often a SeedRef to the seeded one, so that requests get
 * past the lookups. With `hostile`, any node may instead be a hostile leaf (hostile.ts), and objects may lose
 * required members, gain unknown ones or repeat one.
 */

export interface Schema {
  type?: string | string[];
  enum?: unknown[];
  anyOf?: Schema[];
  not?: Schema;
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean | Schema;
  items?: Schema;
  minItems?: number;
  maxItems?: number;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  pattern?: string;
}

/** The keywords this builder understands; anything else in a schema fails `supported` (so a new construct is noticed). */
const KNOWN = new Set(
  Object.keys({
    type: 1,
    enum: 1,
    anyOf: 1,
    not: 1,
    properties: 1,
    required: 1,
    additionalProperties: 1,
    items: 1,
    minItems: 1,
    maxItems: 1,
    minLength: 1,
    maxLength: 1,
    minimum: 1,
    maximum: 1,
    pattern: 1,
    description: 1,
    default: 1,
    title: 1,
    examples: 1,
  }),
);

/** The keywords of `schema` (at any depth) this builder does not understand, as `path: keyword`. */
export function unsupported(schema: Schema, path = ''): string[] {
  const out = Object.keys(schema)
    .filter((k) => !KNOWN.has(k))
    .map((k) => `${path || '/'}: ${k}`);
  for (const [name, s] of Object.entries(schema.properties ?? {})) out.push(...unsupported(s, `${path}/${name}`));
  for (const [i, s] of (schema.anyOf ?? []).entries()) out.push(...unsupported(s, `${path}/anyOf/${i}`));
  if (schema.items) out.push(...unsupported(schema.items, `${path}/items`));
  if (typeof schema.additionalProperties === 'object') out.push(...unsupported(schema.additionalProperties, `${path}/*`));
  return out;
}

/** Which seeds a member may refer to, by `<parent>.<name>` or `<name>` (`<name>[]`: the items of array `<name>`). */
const SEEDED: Record<string, ReadonlyArray<keyof Seeds | 'fresh-hash'>> = {
  apiId: ['apiId'],
  keyId: ['keyId'],
  key: ['key'],
  roleId: ['roleId'],
  permissionId: ['permissionId'],
  identityId: ['identityId'],
  externalId: ['externalId'],
  ownerId: ['externalId'],
  migrationId: ['migrationId'],
  namespaceId: ['namespaceId'],
  namespaceName: ['namespaceName'],
  endpointId: ['endpointId'],
  deliveryId: ['deliveryId'],
  exportId: ['exportId'],
  // ratelimits.limit names its namespace `namespace`; its `identifier` and the override routes' name one.
  namespace: ['namespaceName'],
  identifier: ['overrideIdentifier'],
  targetId: ['keyId', 'apiId', 'roleId'],
  'roles.id': ['roleId'],
  'roles.name': ['roleName'],
  'roles[]': ['roleName'],
  'permissions.id': ['permissionId'],
  'permissions.slug': ['permissionSlug'],
  'permissions.name': ['permissionSlug'],
  'permissions[]': ['permissionSlug'],
  'authorization.permissions': ['permissionSlug'],
  'hash.value': ['fresh-hash'],
  // v2 keys.migrateKeys: each key's hash, in the seeded migration's algorithm (sha256).
  'keys.hash': ['fresh-hash'],
  // v2 names an identity, permission or role by id or by externalId, slug or name in one member.
  identity: ['identityId', 'externalId'],
  permission: ['permissionId', 'permissionSlug'],
  role: ['roleId', 'roleName'],
};

export interface Options {
  /** Hostile leaves and object mutations, at about one node in `1 / hostile`. 0: valid-looking only. */
  hostile: number;
  /** How often (0..1) a seeded member refers to the seed rather than to a drawn value. */
  seeded: number;
}

export interface Where {
  name: string;
  parent?: string;
}

const typesOf = (s: Schema): string[] => (s.type === undefined ? [] : Array.isArray(s.type) ? s.type : [s.type]);

/** An arbitrary of the values of `schema`, found at member `where`. */
export function arbitraryOf(schema: Schema, where: Where, opts: Options): fc.Arbitrary<unknown> {
  const valid = validValue(schema, where, opts);
  if (!opts.hostile) return valid;
  return fc.oneof({ weight: Math.round(1 / opts.hostile) - 1, arbitrary: valid }, { weight: 1, arbitrary: hostileLeaf(typesOf(schema)) });
}

function validValue(schema: Schema, where: Where, opts: Options): fc.Arbitrary<unknown> {
  const seeds = SEEDED[`${where.parent}.${where.name}`] ?? SEEDED[where.name];
  const drawn = drawnValue(schema, where, opts);
  const types = typesOf(schema);
  if (!seeds || (types.length && !types.includes('string'))) return drawn;
  const ref = fc.constantFrom(...seeds).map((s) => new SeedRef(s, where.name));
  if (opts.seeded >= 1) return ref;
  const w = Math.round(opts.seeded * 10);
  return fc.oneof({ weight: w, arbitrary: ref }, { weight: 10 - w, arbitrary: drawn });
}

function drawnValue(schema: Schema, where: Where, opts: Options): fc.Arbitrary<unknown> {
  if (schema.enum) return fc.constantFrom(...schema.enum);
  if (schema.anyOf) return fc.oneof(...schema.anyOf.map((s) => validValue(s, where, opts)));
  const types = typesOf(schema);
  if (!types.length) return freeJson();
  // v2 analytics.*: SQL most of the time, so that queries get past the parser.
  if (where.name === 'query' && types.includes('string')) return fc.oneof({ weight: 4, arbitrary: analyticsQuery() }, string(schema));
  return fc.oneof(...types.map((t) => ofType(t, schema, where, opts)));
}

function ofType(type: string, s: Schema, where: Where, opts: Options): fc.Arbitrary<unknown> {
  switch (type) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer':
      return integer(s);
    case 'number':
      return fc.oneof(integer(s), fc.double({ min: s.minimum, max: s.maximum, noNaN: true, noDefaultInfinity: true }));
    case 'string':
      return string(s);
    case 'array': {
      const item = arbitraryOf(s.items ?? {}, { name: `${where.name}[]` }, opts);
      return fc.array(item, { minLength: s.minItems ?? 0, maxLength: Math.min(s.maxItems ?? 4, Math.max(s.minItems ?? 0, 4)) });
    }
    case 'object':
      return object(s, where, opts);
    default:
      throw new Error(`schema type "${type}" at ${where.name} has no generator`);
  }
}

function integer(s: Schema): fc.Arbitrary<number> {
  const min = Math.max(s.minimum ?? Number.MIN_SAFE_INTEGER, Number.MIN_SAFE_INTEGER);
  const max = Math.min(s.maximum ?? Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
  // Small values are what most real requests hold; the bounds are where off-by-ones live.
  return fc.oneof(fc.integer({ min, max: Math.min(max, Math.max(min, 0) + 1000) }), fc.integer({ min, max }), fc.constantFrom(min, max));
}

function string(s: Schema): fc.Arbitrary<string> {
  const minLength = s.minLength ?? 0;
  const maxLength = Math.min(s.maxLength ?? 40, Math.max(minLength, 40));
  if (s.pattern) return fc.stringMatching(new RegExp(s.pattern), { maxLength: s.maxLength ?? 64 }).filter((v) => v.length >= minLength);
  // ASCII mostly; any Unicode (well-formed) sometimes; the longest allowed now and then.
  const others = [fc.string({ minLength, maxLength, unit: 'grapheme' })];
  if (s.maxLength !== undefined) others.push(fc.constant('k'.repeat(s.maxLength)));
  return fc.oneof({ weight: 3, arbitrary: fc.string({ minLength, maxLength }) }, ...others);
}

/** Any small JSON value: a free-form member (meta) or one with no type (a permission query). */
const freeJson = (): fc.Arbitrary<unknown> => fc.jsonValue({ maxDepth: 2 });

function object(s: Schema, where: Where, opts: Options): fc.Arbitrary<unknown> {
  const declared = Object.entries(s.properties ?? {}).filter(([, p]) => p.not === undefined);
  if (!declared.length && s.additionalProperties !== false) return fc.dictionary(fc.string({ maxLength: 10 }), freeJson(), { maxKeys: 4 });
  const members = Object.fromEntries(
    declared.map(([name, p]) => [name, arbitraryOf(p, { name, parent: where.name.replace(/\[\]$/, '') }, opts)]),
  );
  const required = (s.required ?? []).filter((k) => k in members);
  const optional = Object.keys(members).filter((k) => !required.includes(k));
  // Mostly few optional members, as most real requests have (and fewer cross-member rules to break): deeper code runs.
  const picked = fc.oneof(
    { weight: 3, arbitrary: fc.shuffledSubarray(optional, { maxLength: Math.min(2, optional.length) }) },
    fc.subarray(optional),
  );
  const valid = picked.chain((names) => fc.record(Object.fromEntries([...required, ...names].map((k) => [k, members[k]]))));
  if (!opts.hostile) return valid;
  // Forbidden members (`not: {}`) are offered too, as hostile ones.
  const all = Object.keys(s.properties ?? {});
  return fc.oneof({ weight: Math.round(1 / opts.hostile) - 1, arbitrary: valid }, { weight: 1, arbitrary: hostileObject(valid, all) });
}
