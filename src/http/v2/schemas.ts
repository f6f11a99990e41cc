import { Type } from '@sinclair/typebox';

/** An id a v2 body names (apiId, keyId, …): as v2 bounds them, 3..255 word characters. */
export const ResourceId = Type.String({ minLength: 3, maxLength: 255, pattern: '^[a-zA-Z0-9_]+$' });

/** `limit` and `cursor` of a v2 list body. */
export const PageBody = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 100 })),
  cursor: Type.Optional(Type.String({ minLength: 1, description: 'The `pagination.cursor` of the previous page.' })),
};
