import { Type } from '@sinclair/typebox';
import { readMigration } from '../../../services/migrations/migration-records.ts';
import type { App, Deps } from '../../types.ts';
import { OneOf, requires, responses } from '../../schemas/common.ts';

export default function migrationsGetMigration(app: App, deps: Deps) {
  app.get(
    '/v1/migrations.getMigration',
    {
      schema: {
        ...requires('Progress of a migration: status, item counts and the first 100 failures', '`api.*.read_key`'),
        querystring: Type.Object({ migrationId: Type.String({ minLength: 1 }) }),
        response: responses(
          Type.Object({
            migrationId: Type.String(),
            workspaceId: Type.String(),
            status: OneOf(['pending', 'running', 'completed', 'completed_with_failures'] as const),
            counts: Type.Object({
              enqueued: Type.Integer(),
              pending: Type.Integer(),
              migrated: Type.Integer(),
              failed: Type.Integer(),
            }),
            failures: Type.Array(
              Type.Object({
                index: Type.Integer({ description: "The item's position in the migration, counting every enqueued item from 0." }),
                hash: Type.String(),
                reason: Type.String(),
              }),
              { description: 'The first 100 failed items, by index.' },
            ),
            updatedAt: Type.Integer({ description: 'The last enqueue or item outcome, epoch milliseconds.' }),
          }),
        ),
      },
    },
    (req) => readMigration(deps.store.db, req.caller, req.query.migrationId),
  );
}
