import { Type } from '@sinclair/typebox';
import { listKeys } from '../../../services/apis/apis.ts';
import type { App, Deps } from '../../types.ts';
import { requires, responses, CappedTotal } from '../../schemas/common.ts';
import { KeyView } from '../../schemas/keys.ts';

export default function apisListKeys(app: App, deps: Deps) {
  app.get(
    '/v1/apis.listKeys',
    {
      schema: {
        ...requires(
          'List the live keys of an API, by id, with cursor pagination',
          '`api.<apiId>.read_api` and `api.<apiId>.read_key`; with `decrypt=true` also `api.<apiId>.decrypt_key`',
        ),
        querystring: Type.Object({
          apiId: Type.String({ minLength: 1 }),
          limit: Type.Integer({ minimum: 1, maximum: 100, default: 100 }),
          cursor: Type.Optional(Type.String({ minLength: 1, description: 'The `cursor` of the previous page.' })),
          externalId: Type.Optional(Type.String({ minLength: 1 })),
          ownerId: Type.Optional(Type.String({ minLength: 1, description: 'Deprecated: use externalId.' })),
          decrypt: Type.Optional(Type.Boolean()),
        }),
        response: responses(
          Type.Object({
            keys: Type.Array(KeyView),
            total: CappedTotal('Live keys matching the filter'),
            cursor: Type.Optional(Type.String({ description: 'Present when another page exists.' })),
          }),
        ),
      },
    },
    (req) => listKeys(deps.store.db, req.caller, req.query, deps.vault),
  );
}
