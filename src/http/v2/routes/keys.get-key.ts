import { Type } from '@sinclair/typebox';
import { getKey } from '../../../services/keys/keys.ts';
import type { App, Deps } from '../../types.ts';
import { Body } from '../../schemas/common.ts';
import { ok, v2Requires, v2Responses } from '../envelope.ts';
import { KeyResponseData, keyData } from '../key-data.ts';
import { ResourceId } from '../schemas.ts';

export default function v2KeysGetKey(app: App, deps: Deps) {
  app.post(
    '/v2/keys.getKey',
    {
      schema: {
        ...v2Requires('Get a key', '`api.*.read_key` or `api.<apiId>.read_key`; with `decrypt` also `decrypt_key`'),
        body: Body({
          keyId: ResourceId,
          decrypt: Type.Optional(Type.Boolean({ default: false, description: 'Return `plaintext` of a key stored encrypted.' })),
        }),
        response: v2Responses(KeyResponseData),
      },
    },
    async (req) => {
      const view = await getKey(deps.store.db, req.caller, req.body.keyId, req.body.decrypt === true, deps.vault);
      return ok(req.id, keyData(view));
    },
  );
}
