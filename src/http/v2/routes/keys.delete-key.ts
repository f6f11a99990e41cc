import { Type } from '@sinclair/typebox';
import { deleteKey } from '../../../services/keys/keys.ts';
import type { App, Deps } from '../../types.ts';
import { Body } from '../../schemas/common.ts';
import { ok, v2Requires, v2Responses } from '../envelope.ts';
import { ResourceId } from '../schemas.ts';

export default function v2KeysDeleteKey(app: App, deps: Deps) {
  app.post(
    '/v2/keys.deleteKey',
    {
      schema: {
        ...v2Requires(
          'Delete a key: marked deleted, or with `permanent` removed with everything attached to it',
          '`api.*.delete_key` or `api.<apiId>.delete_key`',
        ),
        body: Body({ keyId: ResourceId, permanent: Type.Optional(Type.Boolean({ default: false })) }),
        response: v2Responses(Type.Object({})),
      },
    },
    async (req) => {
      await deleteKey(deps.store.db, req.caller, req.body.keyId, req.body.permanent === true);
      return ok(req.id, {});
    },
  );
}
