import pino from 'pino';
import { loadConfig, settingSecrets, type Config } from './config/config.ts';
import { ConfigError } from './config/shapes.ts';
import { sqliteDataDirectory } from './config/store.ts';
import { MasterKeyFileError, masterKeysFromConfig } from './crypto/master-keys.ts';
import { createVault, type Vault, VaultError } from './crypto/vault.ts';
import { openStore, type Store, type StoreTracing } from './store/store.ts';
import type { Tracing } from './tracing.ts';
import { bootstrap } from './services/workspaces/workspaces.ts';
import { buildApp } from './app.ts';
import { JobQueue } from './jobs/job-queue.ts';
import { Worker } from './jobs/worker.ts';
import { workerTasks } from './services/worker-tasks.ts';
import {
  checkDataDirectory,
  checkGithubKeysFile,
  checkListenAddress,
  checkRedis,
  listenProblem,
  oneLine,
  StartError,
  storeProblem,
} from './start/checks.ts';
import type { AddressInfo } from 'node:net';
import { listenBaseUrl, recordServerAddress } from './services/dashboard/server-address.ts';
import { handOverBootstrapKey } from './start/bootstrap-key.ts';
import { handStopSignalsTo } from './start/signals.ts';

/** How long the store may take to answer its first statement at start. */
const STORE_START_TIMEOUT_MS = 5_000;

/**
 * Composition root: configuration, start checks, store, first-start bootstrap, HTTP server, job worker,
 * graceful stop. Nothing is created (data directory, schema, master key, workspace, root key) before the
 * listen address is known to be usable, and no root key before the store and Redis are.
 */
async function main(): Promise<void> {
  const config = orExit(() => loadConfig());
  const logger = createLogger(config);
  await checkListenAddress(config.host, config.port);
  const dataDir = sqliteDataDirectory(config.databaseUrl);
  if (dataDir) checkDataDirectory(dataDir);
  if (config.leaks.github?.keysFile) checkGithubKeysFile(config.leaks.github.keysFile);
  const tracing = await startTracingIfOn(config);
  const store = await openCheckedStore(config.databaseUrl, logger, tracing);
  if (config.redisUrl) await checkRedis(config.redisUrl).then((unreachable) => unreachable && logger.warn(unreachable));
  const vault = await openVault(config, store, logger);
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
      ...{ retention: config.retention, analytics: config.analytics },
      leaks: config.leaks,
      webhooks: config.webhooks,
      usage: config.usage,
      oidc: config.oidc,
      tracing,
    },
  );
  // The address was free a moment ago; another process may still take it first.
  const address = await app.listen({ host: config.host, port: config.port }).catch((err: unknown) => {
    throw new StartError(listenProblem(err, config.host, config.port));
  });
  await announceListening(store, config, { address, bound: app.server.address() }, logger);

  // Imports of enqueued keys and webhook deliveries run here unless KEYHOLD_WORKERS=0 (then `keyhold worker` runs them).
  const tasks = workerTasks(store.db, vault, config.webhooks, tracing);
  const worker = config.workers > 0 ? new Worker(new JobQueue(store, tasks), { concurrency: config.workers, logger, tracing }) : undefined;
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
    await tracing?.shutdown(); // the spans still buffered are exported
    process.exit(0);
  };
  handStopSignalsTo((signal) => void stop(signal));
}

/**
 * Logs the listen address, and records where `keyhold dashboard link` sends people when its own environment names
 * no KEYHOLD_PUBLIC_URL: this server's KEYHOLD_PUBLIC_URL, else the address it listens on.
 */
async function announceListening(
  store: Store,
  config: Config,
  { address, bound }: { address: string; bound: AddressInfo | string | null },
  logger: pino.Logger,
): Promise<void> {
  logger.info({ address, database: store.describe, accessLog: config.accessLog }, 'keyhold listening');
  const port = typeof bound === 'object' && bound ? bound.port : config.port;
  const baseUrl = config.publicUrlSet ? config.publicUrl : listenBaseUrl(config.host, port);
  await recordServerAddress(store.db, baseUrl).catch((err: unknown) =>
    logger.warn({ err: (err as Error).message }, 'could not record the server address for dashboard links'),
  );
}

/** OpenTelemetry traces, when on; off, no OpenTelemetry module is even imported, and nothing is wrapped for them. */
async function startTracingIfOn(config: Config): Promise<Tracing | undefined> {
  return config.tracing.enabled ? (await import('./tracing.ts')).startTracing(config.tracing.serviceName) : undefined;
}

/** JSON lines on stdout, with secrets redacted wherever a log call might carry one. */
function createLogger(config: Config): pino.Logger {
  return pino({
    level: config.logLevel,
    redact: {
      paths: ['req.headers.authorization', 'rootKey', 'key', 'plaintext', '*.rootKey', '*.key', '*.plaintext'],
      censor: '[redacted]',
    },
  });
}

/** Invalid settings end the process with exit code 2 and one line per problem, each naming its setting. */
function orExit<T>(read: () => T): T {
  try {
    return read();
  } catch (err) {
    if (err instanceof ConfigError) exitWith(2, err.problems);
    throw err;
  }
}

/** The end of a failed start: each line on stderr, without any secret of the settings, and `code`. */
function exitWith(code: number, lines: string[]): never {
  const secrets = settingSecrets();
  for (const line of lines) {
    const clean = secrets.reduce((text, secret) => text.replaceAll(secret, '***'), line);
    process.stderr.write(`keyhold cannot start: ${clean}\n`);
  }
  process.exit(code);
}

/** The store, answering and with its schema up to date; a store that cannot be used is a StartError. */
async function openCheckedStore(databaseUrl: string, logger: pino.Logger, tracing: StoreTracing | undefined): Promise<Store> {
  const store = openStore(databaseUrl, { tracing });
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

/** The vault of the configured master keys (none: a warning), checked against the stored data keys. */
async function openVault(config: Config, store: Store, logger: pino.Logger): Promise<Vault | undefined> {
  let masterKeys: ReturnType<typeof masterKeysFromConfig>;
  try {
    masterKeys = masterKeysFromConfig(config, (msg) => logger.warn(msg));
  } catch (err) {
    throw err instanceof MasterKeyFileError ? new StartError(err.message) : err;
  }
  if (!masterKeys) {
    logger.warn(
      'KEYHOLD_MASTER_KEYS is not set: no vault, so recoverable keys, plaintext imports and decrypt=true are refused (412). Every server of a PostgreSQL cluster needs the same KEYHOLD_MASTER_KEYS',
    );
  }
  const vault = masterKeys ? createVault(masterKeys) : undefined;
  await checkVault(vault, store);
  return vault;
}

/** Master keys other than those the stored data keys were wrapped with would fail every recoverable key: refuse them now. */
async function checkVault(vault: Vault | undefined, store: Store): Promise<void> {
  try {
    await vault?.check(store.db);
  } catch (err) {
    if (!(err instanceof VaultError)) throw err;
    throw new StartError(
      `KEYHOLD_MASTER_KEYS: the master keys cannot unwrap the stored data keys (${err.message}): list every master key the data was written with (the newest first, the older after it until \`keyhold vault rotate\` ran), or restore master.key from the backup taken with the database`,
    );
  }
}

/** On an empty database: the first workspace and its `*` root key; a generated key goes to the terminal or a file, never to the logs. */
async function bootstrapOnFirstStart(store: Store, config: Config, logger: pino.Logger): Promise<void> {
  let file: string | undefined;
  // Handed over before the bootstrap commits: a key that cannot be handed over leaves nothing created.
  const boot = await bootstrap(store.db, config.bootstrapRootKey, ({ rootKey, generated }) => {
    // A key given in KEYHOLD_BOOTSTRAP_ROOT_KEY is the operator's already: it is never shown anywhere.
    if (!generated) return;
    try {
      file = handOverBootstrapKey(rootKey, process.stdout, config.bootstrapKeyFile);
    } catch (err) {
      throw new StartError(
        `KEYHOLD_BOOTSTRAP_KEY_FILE: cannot write the bootstrap root key to ${config.bootstrapKeyFile} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): set KEYHOLD_BOOTSTRAP_KEY_FILE to a file in a writable directory (nothing was created; the next start tries again)`,
      );
    }
  });
  if (!boot) return;
  logger.info({ workspaceId: boot.workspaceId, rootKeyId: boot.rootKeyId }, 'first start: created the default workspace and a * root key');
  if (file)
    logger.warn({ file }, `first start: the bootstrap root key (*) was written to ${file} (mode 0600): keep it safe, then delete the file`);
}

// Whatever stops the start is one line: a StartError says what to fix; anything else is a bug, told without a stack.
main().catch((err: unknown) => exitWith(1, [err instanceof StartError ? err.message : oneLine(err)]));
