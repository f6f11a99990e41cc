import { Type } from '@sinclair/typebox';
import { MAX_REROLL_EXPIRATION, rerollKey } from '../../../services/keys/reroll-key.ts';
import type { App, Deps } from '../../types.ts';
import { Body } from '../../schemas/common.ts';
import { ok, v2Requires, v2Responses } from '../envelope.ts';
import { ResourceId } from '../schemas.ts';

export default function v2KeysRerollKey(app: App, deps: Deps) {
  app.post(
    '/v2/keys.rerollKey',
    {
      schema: {
        ...v2Requires(
          'Replace a key with a new one that has all its settings; the old key stops working after a grace period',
          '`api.*.create_key` or `api.<apiId>.create_key`; for a recoverable key also `api.*.encrypt_key` or `api.<apiId>.encrypt_key`',
        ),
        body: Body({
          keyId: ResourceId,
          expiration: Type.Integer({
            minimum: 0,
            maximum: MAX_REROLL_EXPIRATION,
            description:
              'Milliseconds from now after which the old key stops verifying (exactly, not rounded); 0 ends it at once. ' +
              'Never later than the old key already expired.',
          }),
        }),
        response: v2Responses(
          Type.Object({
            keyId: Type.String({ description: 'The new key.' }),
            key: Type.String({ description: "The new key's secret: shown this once (recoverable keys can be read back)." }),
          }),
        ),
      },
    },
    async (req) => ok(req.id, await rerollKey(deps.store.db, req.caller, req.body, deps.vault)),
  );
}
