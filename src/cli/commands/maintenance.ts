import { AppError } from '../../domain/errors.ts';
import { loadRetentionConfig } from '../../config/retention.ts';
import { ConfigError } from '../../config/shapes.ts';
import { loadVaultConfig } from '../../config/store.ts';
import { masterKeysFromConfig } from '../../crypto/master-keys.ts';
import { runPrunePass } from '../../services/maintenance/prune.ts';
import { createVault, VaultError } from '../../crypto/vault.ts';
import { workerTasks } from '../../services/worker-tasks.ts';
import { loadConfig } from '../../config/config.ts';
import { runWorkerUntilSignal } from '../../jobs/worker.ts';
import { type CommandGroup, integerOption } from '../command.ts';

/** Running the installation: background jobs, the database schema, the vault's master keys. */
export const MAINTENANCE_COMMANDS: CommandGroup = {
  worker: {
    summary:
      'Runs background jobs (key migrations, webhook deliveries) until SIGTERM or Ctrl-C, then finishes the jobs in flight and exits.',
    options: {
      concurrency: { type: 'string', value: 'N', description: 'jobs run at once, 1..64 (default 4)' },
      'visibility-timeout': {
        type: 'string',
        value: 'MS',
        description:
          'a job whose worker stopped heartbeating this long is taken over, 1000..86400000 (default 30000; one value for every worker)',
      },
    },
    prints: '{"workerId","completed","retried","failed","lost"}',
    async run({ store }, values) {
      const config = loadConfig();
      const masterKeys = masterKeysFromConfig(config, () => {});
      const tasks = workerTasks(store.db, masterKeys ? createVault(masterKeys) : undefined, config.webhooks);
      const stats = await runWorkerUntilSignal(store, tasks, {
        concurrency: integerOption(values, 'concurrency', 4, 1, 64),
        visibilityTimeoutMs: integerOption(values, 'visibility-timeout', 30_000, 1000, 86_400_000),
      });
      return {
        json: stats,
        text: `worker ${stats.workerId} stopped: ${stats.completed} job(s) completed, ${stats.retried} retried, ${stats.failed} failed`,
      };
    },
  },
  'db migrate': {
    summary: 'Brings the database schema up to date (the server also does this when it starts).',
    options: {},
    prints: '{"applied":[…migration names]}',
    async run({ applied }) {
      // Migrations run whenever the CLI opens the store; this command only reports what they did.
      return { json: { applied }, text: applied.length ? `applied: ${applied.join(', ')}` : 'schema is up to date' };
    },
  },
  'maintenance prune': {
    summary:
      'Runs one retention pass now: removes what is older than its retention (KEYHOLD_*_RETENTION_DAYS) and prints the rows removed per kind.',
    options: {},
    prints: '{"pruned":{"<kind>":n,…}}',
    async run({ store }) {
      // The same pass the server runs in the background, with the same settings; running it beside a server is
      // harmless (each batch removes what is still there).
      const pruned = await runPrunePass(store, loadRetentionConfig());
      const lines = Object.entries(pruned).map(([kind, n]) => `${kind}: ${n}`);
      return { json: { pruned }, text: `removed ${lines.length ? lines.join(', ') : 'nothing (every kind is kept forever)'}` };
    },
  },
  'vault rotate': {
    summary: 'Re-wraps every data key under the newest master key (KEYHOLD_MASTER_KEYS, or the SQLite master.key). Safe to re-run.',
    options: {},
    prints: '{"rewrapped"}',
    async run({ store }) {
      // The master keys come from where the server takes them (KEYHOLD_MASTER_KEYS, else the SQLite data directory's file).
      const masterKeys = masterKeysFromConfig(loadVaultConfig(), (msg) => process.stderr.write(`keyhold: ${msg}\n`));
      if (!masterKeys) throw new ConfigError('KEYHOLD_MASTER_KEYS must be set to rotate the vault of a PostgreSQL database');
      try {
        const { rewrapped } = await createVault(masterKeys).rotate(store.db);
        return { json: { rewrapped }, text: `${rewrapped} data key(s) re-wrapped under master key "${masterKeys[0].id}"` };
      } catch (e) {
        if (e instanceof VaultError) throw new AppError('state/precondition-failed', e.message);
        throw e;
      }
    },
  },
};
