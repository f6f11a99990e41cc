import { Type, type Static, type TProperties, type TSchema } from '@sinclair/typebox';
import { BOUNDS, MAX_TAG_LENGTH, MAX_TAGS, type NumericDomain } from '../../domain/bounds.ts';
import { TOTAL_CAP } from '../../services/pagination.ts';

/** A request body object: members not declared are dropped before the handler sees them (older clients send deprecated fields). */
export const Body = <T extends TProperties>(props: T, description?: string) =>
  Type.Object(props, { additionalProperties: false, ...(description ? { description } : {}) });

/** A string from a fixed set, as one `enum` (a union of literals would report one failed branch per literal). */
export const OneOf = <T extends string>(values: readonly T[]) => Type.Unsafe<T>({ type: 'string', enum: [...values] });

/**
 * `schema` or null, as one JSON Schema `type: [<type>, "null"]` (OpenAPI 3.1) rather than a union: a bad
 * value is then reported once at its path, not once per branch.
 */
export const Nullable = <T extends TSchema>(schema: T) => {
  const plain = JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
  return Type.Unsafe<Static<T> | null>({ ...plain, type: [plain.type, 'null'] });
};

/** One tag of a verification: 1..MAX_TAG_LENGTH characters, stored exactly as given. */
export const Tag = Type.String({ minLength: 1, maxLength: MAX_TAG_LENGTH });

/** The `tags` of keys.verifyKey (v1 and v2). */
export const VerificationTags = Type.Array(Tag, {
  maxItems: MAX_TAGS,
  description: 'Recorded with this verification for analytics, exactly as given (docs/analytics.md).',
});

/** Free-form JSON object (meta). */
export const Meta = Type.Object({}, { additionalProperties: true, description: 'Free-form JSON object, at most 64 KiB as JSON.' });

export const ErrorEnvelope = Type.Object(
  {
    meta: Type.Object({ requestId: Type.String() }),
    error: Type.Object({
      title: Type.String(),
      detail: Type.String(),
      status: Type.Integer(),
      type: Type.String(),
      code: Type.String(),
      message: Type.String({ description: 'The same as `detail` (the member Unkey v1 clients read).' }),
      docs: Type.String({ description: 'The same as `type` (the member Unkey v1 clients read).' }),
      requestId: Type.String({ description: 'The same as `meta.requestId` (the member Unkey v1 clients read).' }),
      errors: Type.Optional(Type.Array(Type.Object({ path: Type.String(), message: Type.String() }))),
    }),
  },
  { $id: 'ErrorEnvelope', description: 'Every non-2xx response.' },
);

/** The response map of an operation: its success body plus the error envelope for every error status. */
export const responses = (ok: TSchema, status: 200 | 202 = 200) => ({
  [status]: ok,
  '4xx': Type.Ref(ErrorEnvelope),
  '5xx': Type.Ref(ErrorEnvelope),
});

/** OpenAPI description of an operation, naming the permission it requires. */
export const requires = (
  summary: string,
  permission: string,
): { summary: string; description: string; security: Array<Record<string, string[]>> } => ({
  summary,
  description: `${summary}\n\nRequires: ${permission}`,
  security: [{ rootKey: [] }],
});

/** `limit` (1..100, default 100) and the `cursor` of the previous page. */
export const PageQuery = Type.Object({
  // Optional in the document (clients may omit it); the validator fills in the default.
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 100 })),
  cursor: Type.Optional(Type.String({ minLength: 1, description: 'The `cursor` of the previous page.' })),
});

/** A list's `total`: exact up to TOTAL_CAP, and TOTAL_CAP + 1 when more match (counting stops there). */
export const CappedTotal = (what: string) =>
  Type.Integer({
    minimum: 0,
    description: `${what}, counted up to ${TOTAL_CAP.toLocaleString('en')}: ${(TOTAL_CAP + 1).toLocaleString('en')} means more than ${TOTAL_CAP.toLocaleString('en')}.`,
  });

/** `{id, name}` items sorted by name. */
export const NamedList = (description: string) => Type.Array(Type.Object({ id: Type.String(), name: Type.String() }), { description });

/**
 * An integer of one numeric domain (domain/bounds.ts): every number a request carries is one of these, so
 * both dialects store it exactly and no computation on it overflows. `minimum` narrows the domain (credits
 * given at creation start at 1).
 */
export const Bounded = (domain: NumericDomain, options: { minimum?: number; description?: string; default?: number } = {}) =>
  Type.Integer({ ...BOUNDS[domain], ...options });

/**
 * A query parameter taking 1..`maxItems` values, sent repeated (`keyId=a&keyId=b`) or comma-joined
 * (`keyId=a,b`, what Unkey's v1 SDK sends): the query validator splits it before checking the items and
 * their number (http/query-lists.ts), so an item may not contain a comma and an empty one (`a,,b`) is a 400.
 */
export const QueryList = <T extends TSchema>(item: T, maxItems: number, description: string) =>
  Type.Array(item, { minItems: 1, maxItems, description: `${description} Several: repeat the parameter, or join them with commas.` });
