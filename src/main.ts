import pino from 'pino';
import { loadConfig, ConfigError, masterKeysFromConfig, type Config } from './config.ts';
import { createVault, type Vault } from './crypto/vault.ts';
import { openStore, type Store } from './store/store.ts';
import { bootstrap } from './services/workspaces/workspaces.ts';
import { buildApp } from './app.ts';
import { JobQueue } from './jobs/job-queue.ts';
import { Worker } from './jobs/worker.ts';
import { WORKER_TASKS } from './services/migrations/migration-import-task.ts';

/** Composition root: configuration, store, first-start bootstrap, HTTP server, job worker, graceful stop. */
async function main(): Promise<void> {
  const config = orExit(() => loadConfig());
  const logger = pino({
    level: config.logLevel,
    redact: {
      paths: ['req.headers.authorization', 'rootKey', 'key', 'plaintext', '*.rootKey', '*.key', '*.plaintext'],
      censor: '[redacted]',
    },
  });
  const vault = openVault(config, logger);
  const store = openStore(config.databaseUrl);
  const applied = await store.migrate();
  if (applied.length) logger.info({ migrations: applied }, 'schema migrations applied');
  await bootstrapOnFirstStart(store, config, logger);

  const app = await buildApp({ store }, { logger, processMetrics: true, redisUrl: config.redisUrl, vault });
  const address = await app.listen({ host: config.host, port: config.port });
  logger.info({ address, database: store.describe }, 'keyhold listening');

  // Imports of enqueued keys (migrations.enqueueKeys) run here unless KEYHOLD_WORKERS=0 (then `keyhold worker` runs them).
  const worker = config.workers > 0 ? new Worker(new JobQueue(store, WORKER_TASKS), { concurrency: config.workers, logger }) : undefined;
  worker?.start();
  if (worker) logger.info({ worker: worker.id, concurrency: config.workers }, 'job worker started');

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), 10_000);
    force.unref();
    // The worker finishes the jobs it is running; one cut short by the force exit is retried after its lock expires.
    await Promise.all([app.close(), worker?.stop()]);
    await store.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

/** A configuration problem ends the process with its message and exit code 2. */
function orExit<T>(read: () => T): T {
  try {
    return read();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(2);
    }
    throw err;
  }
}

function openVault(config: Config, logger: pino.Logger): Vault | undefined {
  const masterKeys = orExit(() => masterKeysFromConfig(config, (msg) => logger.warn(msg)));
  if (!masterKeys) {
    logger.warn(
      'KEYHOLD_MASTER_KEYS is not set: no vault, so recoverable keys, plaintext imports and decrypt=true are refused (412). Every server of a PostgreSQL cluster needs the same KEYHOLD_MASTER_KEYS',
    );
  }
  return masterKeys ? createVault(masterKeys) : undefined;
}

async function bootstrapOnFirstStart(store: Store, config: Config, logger: pino.Logger): Promise<void> {
  const boot = await bootstrap(store.db, config.bootstrapRootKey);
  if (!boot) return;
  logger.info({ workspaceId: boot.workspaceId, rootKeyId: boot.rootKeyId }, 'first start: created the default workspace and a * root key');
  if (boot.generated) {
    // Shown once, on the terminal only: it is never logged or stored in plaintext.
    process.stdout.write(`\nKeyhold bootstrap root key (shown once, keep it safe):\n\n  ${boot.rootKey}\n\n`);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
