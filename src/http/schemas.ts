import { Type, type Static, type TProperties, type TSchema } from '@sinclair/typebox';

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

/** Free-form JSON object (meta). */
export const Meta = Type.Object({}, { additionalProperties: true, description: 'Free-form JSON object, at most 64 KiB as JSON.' });

export const ErrorEnvelope = Type.Object({
  meta: Type.Object({ requestId: Type.String() }),
  error: Type.Object({
    title: Type.String(),
    detail: Type.String(),
    status: Type.Integer(),
    type: Type.String(),
    code: Type.String(),
    errors: Type.Optional(Type.Array(Type.Object({ path: Type.String(), message: Type.String() }))),
  }),
}, { $id: 'ErrorEnvelope', description: 'Every non-2xx response.' });

/** The response map of an operation: its success body plus the error envelope for every error status. */
export const responses = (ok: TSchema, status: 200 | 202 = 200) => ({
  [status]: ok,
  '4xx': Type.Ref(ErrorEnvelope),
  '5xx': Type.Ref(ErrorEnvelope),
});

/** OpenAPI description of an operation, naming the permission it requires. */
export const requires = (summary: string, permission: string): { summary: string; description: string; security: Array<Record<string, string[]>> } => ({
  summary,
  description: `${summary}\n\nRequires: ${permission}`,
  security: [{ rootKey: [] }],
});

export const KeyView = Type.Object({
  id: Type.String(),
  start: Type.String(),
  apiId: Type.String(),
  workspaceId: Type.String(),
  name: Type.Optional(Type.String()),
  ownerId: Type.Optional(Type.String({ description: 'Deprecated: the identity\'s externalId.' })),
  externalId: Type.Optional(Type.String()),
  meta: Type.Optional(Meta),
  createdAt: Type.Integer(),
  updatedAt: Type.Integer(),
  lastUsedAt: Type.Optional(Type.Integer()),
  expires: Type.Optional(Type.Integer()),
  remaining: Type.Optional(Type.Integer()),
  refill: Type.Optional(Type.Object({
    interval: Type.Union([Type.Literal('daily'), Type.Literal('monthly')]),
    amount: Type.Integer(),
    refillDay: Type.Optional(Type.Integer()),
    lastRefillAt: Type.Optional(Type.Integer()),
  })),
  ratelimit: Type.Optional(Type.Object({
    async: Type.Boolean(),
    type: Type.Union([Type.Literal('fast'), Type.Literal('consistent')]),
    limit: Type.Integer(),
    duration: Type.Integer(),
    refillRate: Type.Integer(),
    refillInterval: Type.Integer(),
  })),
  roles: Type.Array(Type.String()),
  permissions: Type.Array(Type.String()),
  enabled: Type.Boolean(),
  environment: Type.Optional(Type.String()),
  identity: Type.Optional(Type.Object({ id: Type.String(), externalId: Type.String(), meta: Meta })),
  plaintext: Type.Optional(Type.String()),
});

export const IdentityRatelimits = Type.Array(Type.Object({
  name: Type.String({ minLength: 1, maxLength: 256 }),
  limit: Type.Integer({ minimum: 1 }),
  duration: Type.Integer({ minimum: 1000, description: 'Window in milliseconds.' }),
}, { additionalProperties: false }), { maxItems: 100 });

export const IdentityView = Type.Object({
  id: Type.String(),
  externalId: Type.String(),
  environment: Type.String(),
  meta: Meta,
  ratelimits: Type.Array(Type.Object({ name: Type.String(), limit: Type.Integer(), duration: Type.Integer() })),
});
