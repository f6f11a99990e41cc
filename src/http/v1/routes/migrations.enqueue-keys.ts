import { Type } from '@sinclair/typebox';
import { enqueueItemProblems, enqueueKeys, MAX_ENQUEUE_ITEMS } from '../../../services/migrations/enqueue-keys.ts';
import type { App, Deps } from '../../types.ts';
import { requires, responses } from '../../schemas/common.ts';
import { EnqueueItem } from '../../schemas/migrations.ts';

export default function migrationsEnqueueKeys(app: App, deps: Deps) {
  app.post(
    '/v1/migrations.enqueueKeys',
    {
      config: { bodyRules: enqueueItemProblems },
      schema: {
        ...requires(
          'Queue up to 100 keys (hashes or plaintexts) for import into one API; workers import them, and migrations.getMigration reports each outcome',
          '`api.<apiId>.create_key`; plus `api.<apiId>.encrypt_key` when an item has `plaintext`',
        ),
        body: Type.Object(
          {
            migrationId: Type.String({ minLength: 1, description: 'From the operator: `keyhold migrations create --workspace <ws>`.' }),
            apiId: Type.String({ minLength: 1 }),
            keys: Type.Array(EnqueueItem, { minItems: 1, maxItems: MAX_ENQUEUE_ITEMS }),
          },
          { additionalProperties: false },
        ),
        response: responses(
          Type.Object({
            migrationId: Type.String(),
            enqueued: Type.Integer({ description: 'Items committed to the migration by this request; each ends as migrated or failed.' }),
          }),
          202,
        ),
      },
    },
    async (req, reply) => {
      const result = await enqueueKeys(deps.store.db, req.caller, req.body, deps.vault);
      return reply.code(202).send(result);
    },
  );
}
