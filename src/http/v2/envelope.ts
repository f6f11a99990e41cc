import { Type, type TSchema } from '@sinclair/typebox';

/**
 * Unkey v2's envelopes: `{meta: {requestId}, data}` on success, with `pagination: {cursor?, hasMore}` beside
 * them for lists, and `{meta, error: {title, detail, status, type, errors?}}` for every error (errors.ts).
 */

const Meta = Type.Object({ requestId: Type.String() });

export const V2ErrorEnvelope = Type.Object(
  {
    meta: Meta,
    error: Type.Object({
      title: Type.String(),
      detail: Type.String(),
      status: Type.Integer(),
      type: Type.String({ description: 'https://unkey.com/docs/errors/… as Unkey v2 names the kind of error.' }),
      errors: Type.Optional(
        Type.Array(
          Type.Object({
            location: Type.String({ description: 'The JSON path of the invalid member, e.g. `/name`.' }),
            message: Type.String(),
            fix: Type.Optional(Type.String()),
          }),
          { description: 'On every 400: each problem of the request (empty when the problem is not one member).' },
        ),
      ),
    }),
  },
  { $id: 'V2ErrorEnvelope', description: 'Every non-2xx response of a /v2 operation.' },
);

const errorResponses = { '4xx': Type.Ref(V2ErrorEnvelope), '5xx': Type.Ref(V2ErrorEnvelope) };

/** The responses of a v2 operation answering `data`. */
export const v2Responses = (data: TSchema) => ({ 200: Type.Object({ meta: Meta, data }), ...errorResponses });

/** The responses of a paginated v2 list of `item`. */
export const v2PageResponses = (item: TSchema) => ({
  200: Type.Object({
    meta: Meta,
    data: Type.Array(item),
    pagination: Type.Object({
      cursor: Type.Optional(Type.String({ description: 'Present when more items exist: send it back as `cursor` for the next page.' })),
      hasMore: Type.Boolean(),
    }),
  }),
  ...errorResponses,
});

/** A v2 success body. */
export const ok = <T>(requestId: string, data: T) => ({ meta: { requestId }, data });

/** A v2 page: `cursor` (the service's cursor of the next page) present exactly when there is one. */
export const paged = <T>(requestId: string, data: T[], cursor: string | undefined) => ({
  meta: { requestId },
  data,
  pagination: cursor === undefined ? { hasMore: false } : { cursor, hasMore: true },
});

/** OpenAPI text of a v2 operation naming the permission it requires (as `requires` for v1). */
export const v2Requires = (summary: string, permission: string) => ({
  summary,
  description: `${summary}\n\nRequires: ${permission}`,
  security: [{ rootKey: [] }],
});
