import { Type } from '@sinclair/typebox';
import { getKey } from '../../../services/keys/keys.ts';
import type { App, Deps } from '../../types.ts';
import { requires, responses } from '../../schemas/common.ts';
import { KeyView } from '../../schemas/keys.ts';

export default function keysGetKey(app: App, deps: Deps) {
  app.get(
    '/v1/keys.getKey',
    {
      schema: {
        ...requires('Get a key', '`api.<apiId>.read_key`; with `decrypt=true` also `api.<apiId>.decrypt_key`'),
        querystring: Type.Object({ keyId: Type.String({ minLength: 1 }), decrypt: Type.Optional(Type.Boolean()) }),
        response: responses(KeyView),
      },
    },
    (req) => getKey(deps.store.db, req.caller, req.query.keyId, req.query.decrypt === true, deps.vault),
  );
}
