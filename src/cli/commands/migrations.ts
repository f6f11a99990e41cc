import { isMigrationAlgorithm, MIGRATION_ALGORITHMS } from '../../services/migrations/hash-algorithms.ts';
import { createMigration, getMigration } from '../../services/migrations/migration-records.ts';
import { type CommandGroup, requiredOption, stringOption, UsageError } from '../command.ts';

export const MIGRATION_COMMANDS: CommandGroup = {
  'migrations create': {
    summary: 'Creates a key migration for a workspace; hand its id to the workspace for migrations.enqueueKeys or /v2/keys.migrateKeys.',
    options: {
      workspace: { type: 'string', required: true, value: 'W', description: 'the workspace whose keys it imports' },
      name: { type: 'string', value: 'N', description: 'a name to tell it by' },
      algorithm: {
        type: 'string',
        value: 'A',
        description: `how its keys were hashed: ${MIGRATION_ALGORITHMS.join(', ')} (default sha256, Keyhold's own; the others are rewritten to it on each key's first verification naming the migration)`,
      },
    },
    prints: '{"migrationId"}',
    async run({ store, actor }, values) {
      const algorithm = stringOption(values, 'algorithm') ?? 'sha256';
      if (!isMigrationAlgorithm(algorithm)) throw new UsageError(`--algorithm must be one of ${MIGRATION_ALGORITHMS.join(', ')}`);
      const r = await createMigration(store.db, requiredOption(values, 'workspace'), stringOption(values, 'name'), actor, algorithm);
      return {
        json: r,
        text: `migration ${r.migrationId} (${algorithm}) created; give its id to the workspace for migrations.enqueueKeys or /v2/keys.migrateKeys`,
      };
    },
  },
  'migrations status': {
    summary: "A migration's status, counts and first 100 failures (as migrations.getMigration).",
    options: { id: { type: 'string', required: true, value: 'M', description: 'the id of the migration (mig_…)' } },
    prints: '{"migrationId","workspaceId","status","counts","failures","updatedAt"}',
    async run({ store }, values) {
      const m = await getMigration(store.db, null, requiredOption(values, 'id'));
      const c = m.counts;
      const failures = m.failures.map((f) => `\n  #${f.index} ${f.hash}: ${f.reason}`).join('');
      return {
        json: m,
        text: `${m.migrationId} (${m.workspaceId}): ${m.status}; ${c.enqueued} enqueued, ${c.pending} pending, ${c.migrated} migrated, ${c.failed} failed${failures}`,
      };
    },
  },
};
