import pino from 'pino';
import { loadConfig, ConfigError } from './config.ts';
import { openStore } from './store/store.ts';
import { bootstrap } from './services/workspaces.ts';
import { buildApp } from './app.ts';

/** Composition root: configuration, store, first-start bootstrap, HTTP server, graceful stop. */
async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) { console.error(err.message); process.exit(2); }
    throw err;
  }
  const logger = pino({
    level: config.logLevel,
    redact: { paths: ['req.headers.authorization', 'rootKey', 'key', 'plaintext', '*.rootKey', '*.key', '*.plaintext'], censor: '[redacted]' },
  });
  const store = openStore(config.databaseUrl);
  const applied = await store.migrate();
  if (applied.length) logger.info({ migrations: applied }, 'schema migrations applied');

  const boot = await bootstrap(store.db, config.bootstrapRootKey);
  if (boot) {
    logger.info({ workspaceId: boot.workspaceId, rootKeyId: boot.rootKeyId }, 'first start: created the default workspace and a * root key');
    if (boot.generated) {
      // Shown once, on the terminal only: it is never logged or stored in plaintext.
      process.stdout.write(`\nKeyhold bootstrap root key (shown once, keep it safe):\n\n  ${boot.rootKey}\n\n`);
    }
  }

  const app = await buildApp({ store }, { logger, processMetrics: true, redisUrl: config.redisUrl });
  const address = await app.listen({ host: config.host, port: config.port });
  logger.info({ address, database: store.describe }, 'keyhold listening');

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), 10_000);
    force.unref();
    await app.close();
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
