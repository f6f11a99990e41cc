import { Type } from '@sinclair/typebox';
import { deleteKey } from '../../../services/keys/keys.ts';
import type { App, Deps } from '../../types.ts';
import { Body, requires, responses } from '../../schemas/common.ts';

export default function keysDeleteKey(app: App, deps: Deps) {
  app.post(
    '/v1/keys.deleteKey',
    {
      schema: {
        ...requires('Delete a key (soft by default; `permanent: true` removes the row)', '`api.<apiId>.delete_key`'),
        body: Body({ keyId: Type.String({ minLength: 1 }), permanent: Type.Optional(Type.Boolean({ default: false })) }),
        response: responses(Type.Object({})),
      },
    },
    async (req) => {
      await deleteKey(deps.store.db, req.caller, req.body.keyId, req.body.permanent === true);
      return {};
    },
  );
}
