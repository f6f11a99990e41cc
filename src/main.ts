import pino from 'pino';
import { loadConfig, ConfigError, masterKeysFromConfig, type Config } from './config.ts';
import type { MasterKey } from './crypto/master-keys.ts';
import { createVault } from './crypto/vault.ts';
import { openStore } from './store/store.ts';
import { bootstrap } from './services/workspaces/workspaces.ts';
import { buildApp } from './app.ts';
import { JobQueue } from './jobs/queue.ts';
import { Worker } from './jobs/worker.ts';
import { WORKER_TASKS } from './services/migrations/key-migrations.ts';

/** Composition root: configuration, store, first-start bootstrap, HTTP server, job worker, graceful stop. */
async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(2);
    }
    throw err;
  }
  const logger = pino({
    level: config.logLevel,
    redact: {
      paths: ['req.headers.authorization', 'rootKey', 'key', 'plaintext', '*.rootKey', '*.key', '*.plaintext'],
      censor: '[redacted]',
    },
  });
  let masterKeys: MasterKey[] | undefined;
  try {
    masterKeys = masterKeysFromConfig(config, (msg) => logger.warn(msg));
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(2);
    }
    throw err;
  }
  if (!masterKeys) {
    logger.warn(
      'KEYHOLD_MASTER_KEYS is not set: no vault, so recoverable keys, plaintext imports and decrypt=true are refused (412). Every server of a PostgreSQL cluster needs the same KEYHOLD_MASTER_KEYS',
    );
  }
  const vault = masterKeys ? createVault(masterKeys) : undefined;
  const store = openStore(config.databaseUrl);
  const applied = await store.migrate();
  if (applied.length) logger.info({ migrations: applied }, 'schema migrations applied');

  const boot = await bootstrap(store.db, config.bootstrapRootKey);
  if (boot) {
    logger.info(
      { workspaceId: boot.workspaceId, rootKeyId: boot.rootKeyId },
      'first start: created the default workspace and a * root key',
    );
    if (boot.generated) {
      // Shown once, on the terminal only: it is never logged or stored in plaintext.
      process.stdout.write(`\nKeyhold bootstrap root key (shown once, keep it safe):\n\n  ${boot.rootKey}\n\n`);
    }
  }

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

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
