import { createMigration, getMigration } from '../../services/migrations/migration-records.ts';
import { type CommandGroup, requiredOption, stringOption } from '../command.ts';

export const MIGRATION_COMMANDS: CommandGroup = {
  'migrations create': {
    summary: 'Creates a key migration for a workspace; hand its id to the workspace for migrations.enqueueKeys.',
    options: {
      workspace: { type: 'string', required: true, value: 'W', description: 'the workspace whose keys it imports' },
      name: { type: 'string', value: 'N', description: 'a name to tell it by' },
    },
    prints: '{"migrationId"}',
    async run({ store, actor }, values) {
      const r = await createMigration(store.db, requiredOption(values, 'workspace'), stringOption(values, 'name'), actor);
      return { json: r, text: `migration ${r.migrationId} created; give its id to the workspace for migrations.enqueueKeys` };
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
