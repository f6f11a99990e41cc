import pino from 'pino';
import { loadConfig, ConfigError, masterKeysFromConfig, sqliteDataDirectory, type Config } from './config.ts';
import { createVault, type Vault } from './crypto/vault.ts';
import { openStore, type Store } from './store/store.ts';
import { bootstrap } from './services/workspaces/workspaces.ts';
import { buildApp } from './app.ts';
import { JobQueue } from './jobs/job-queue.ts';
import { Worker } from './jobs/worker.ts';
import { WORKER_TASKS } from './services/migrations/migration-import-task.ts';
import { checkDataDirectory, checkListenAddress, checkRedis, listenProblem, StartError, storeProblem } from './start-checks.ts';
import { handOverBootstrapKey } from './bootstrap-key.ts';

/** How long the store may take to answer its first statement at start. */
const STORE_START_TIMEOUT_MS = 5_000;

/**
 * Composition root: configuration, start checks, store, first-start bootstrap, HTTP server, job worker,
 * graceful stop. Nothing is created (data directory, schema, master key, workspace, root key) before the
 * listen address is known to be usable, and no root key before the store and Redis are.
 */
async function main(): Promise<void> {
  const config = orExit(() => loadConfig());
  const logger = pino({
    level: config.logLevel,
    redact: {
      paths: ['req.headers.authorization', 'rootKey', 'key', 'plaintext', '*.rootKey', '*.key', '*.plaintext'],
      censor: '[redacted]',
    },
  });
  await checkListenAddress(config.host, config.port);
  const dataDir = sqliteDataDirectory(config.databaseUrl);
  if (dataDir) checkDataDirectory(dataDir);
  const store = await openCheckedStore(config.databaseUrl, logger);
  if (config.redisUrl) {
    const unreachable = await checkRedis(config.redisUrl);
    if (unreachable) logger.warn(unreachable);
  }
  const vault = openVault(config, logger);
  await bootstrapOnFirstStart(store, config, logger);

  const app = await buildApp(
    { store },
    {
      logger,
      processMetrics: true,
      redisUrl: config.redisUrl,
      vault,
      accessLog: config.accessLog,
      authFailureLimit: config.authFailureLimit,
      keyCacheSize: config.keyCacheSize,
      publicUrl: config.publicUrl,
      retention: config.retention,
    },
  );
  // The address was free a moment ago; another process may still take it first.
  const address = await app.listen({ host: config.host, port: config.port }).catch((err: unknown) => {
    throw new StartError(listenProblem(err, config.host, config.port));
  });
  logger.info({ address, database: store.describe, accessLog: config.accessLog }, 'keyhold listening');

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

/** The store, answering and with its schema up to date; a store that cannot be used is a StartError. */
async function openCheckedStore(databaseUrl: string, logger: pino.Logger): Promise<Store> {
  const store = openStore(databaseUrl);
  try {
    await store.ping(STORE_START_TIMEOUT_MS);
    const applied = await store.migrate();
    if (applied.length) logger.info({ migrations: applied }, 'schema migrations applied');
    return store;
  } catch (err) {
    await store.close().catch(() => {});
    throw new StartError(storeProblem(err, databaseUrl));
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

/** On an empty database: the first workspace and its `*` root key; a generated key goes to the terminal or a file, never to the logs. */
async function bootstrapOnFirstStart(store: Store, config: Config, logger: pino.Logger): Promise<void> {
  const boot = await bootstrap(store.db, config.bootstrapRootKey);
  if (!boot) return;
  const { workspaceId, rootKeyId } = boot;
  logger.info({ workspaceId, rootKeyId }, 'first start: created the default workspace and a * root key');
  // A key given in KEYHOLD_BOOTSTRAP_ROOT_KEY is the operator's already: it is never shown anywhere.
  if (!boot.generated) return;
  let file: string | undefined;
  try {
    file = handOverBootstrapKey(boot.rootKey, process.stdout, config.bootstrapKeyFile);
  } catch (err) {
    throw new StartError(
      `KEYHOLD_BOOTSTRAP_KEY_FILE: cannot write the bootstrap root key to ${config.bootstrapKeyFile} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); workspace ${workspaceId} exists without a usable key: create one with \`keyhold root-keys create --workspace ${workspaceId} --permission '*'\``,
    );
  }
  if (file)
    logger.warn({ file }, `first start: the bootstrap root key (*) was written to ${file} (mode 0600): keep it safe, then delete the file`);
}

main().catch((err: unknown) => {
  if (err instanceof StartError) {
    process.stderr.write(`keyhold cannot start: ${err.message}\n`);
    process.exit(1);
  }
  console.error(err);
  process.exit(1);
});
