import Fastify, { LogController, type FastifyBaseLogger, type FastifyBodyParser } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Ajv } from 'ajv';
import { newId } from './domain/ids.ts';
import { errorHandler, sendError } from './http/errors.ts';
import { createMetrics } from './http/metrics.ts';
import { jobQueueStats } from './jobs/queue.ts';
import { installHooks } from './http/hooks.ts';
import type { RootKeyGuard } from './services/workspaces/root-key-guard.ts';
import type { AccessLog } from './http/access-log.ts';
import { installRequestTracing, type RequestTracing } from './http/request-tracing.ts';
import { guardedJsonParser, guardedValidator } from './http/input-guards.ts';
import { serializerFactory, validatorCompiler } from './http/route-compilers.ts';
import { answerClientError } from './http/connection-errors.ts';
import { registerDocs, registerOpenApiRoute } from './http/docs.ts';
import { ErrorEnvelope } from './http/schemas/common.ts';
import { ROUTES } from './http/v1/operations.ts';
import { V2_ROUTES } from './http/v2/operations.ts';
import { V2ErrorEnvelope } from './http/v2/envelope.ts';
import { VerifyKeyBody } from './http/schemas/keys.ts';
import { LimitBody } from './http/schemas/ratelimits.ts';
import { createLane, createLaneServer, type Lane } from './http/lane.ts';
import { ratelimitsLimitOperation, verifyKeyOperation, verifyKeyV2Operation } from './http/lane-operations.ts';
import { VerifyKeyV2Body } from './http/v2/verify-data.ts';
import type { App, Deps } from './http/types.ts';
import type { Store } from './store/store.ts';
import type { RedisTracing } from './store/redis.ts';
import { registerDashboard } from './http/dashboard/register.ts';
import { OidcClient, withOidcReadiness } from './services/dashboard/oidc-client.ts';
import type { OidcConfig } from './config/oidc.ts';
import { createRuntime, type BufferCapacities } from './services/verification/runtime.ts';
import type { Vault } from './crypto/vault.ts';
import type { RetentionConfig } from './config/retention.ts';
import { Pruner, type PrunerStats } from './services/maintenance/pruner.ts';
import type { LeakConfig } from './config/leaks.ts';
import { registerGithubSecretScanning } from './http/secret-scanning/github.ts';
import type { InternalCallers } from './http/internal-callers.ts';
import { CrossingEvents } from './services/webhooks/crossing-events.ts';
import { isStoreUnavailable } from './store/errors.ts';
import { startExpirySweeps } from './services/webhooks/expiry-sweep.ts';
import { deliveryOutcomes, oldestPendingDelivery } from './services/webhooks/delivery-task.ts';
import type { AnalyticsConfig } from './config/analytics.ts';
import { DEFAULT_WEBHOOK_SETTINGS as WEBHOOKS, type WebhookSettings } from './config/webhooks.ts';
import { DEFAULT_USAGE_SETTINGS, type UsageSettings } from './config/usage.ts';
import { startUsageScans } from './services/usage/period-claims.ts';
import type { UsageContext } from './services/usage/exports.ts';
import { reportOutcomes } from './services/usage/send-task.ts';

export interface AppOptions {
  /** Redis for cluster-wide rate limits and cache invalidation (REDIS_URL). */
  redisUrl?: string;
  /** Keys the verification cache holds at most (KEYHOLD_KEY_CACHE_SIZE; default 100,000). */
  keyCacheSize?: number;
  /** Analytics recording (KEYHOLD_ANALYTICS, KEYHOLD_REGION); default on, region `local`. */
  analytics?: AnalyticsConfig;
  /** A pino logger; none in tests. */
  logger?: FastifyBaseLogger;
  /** Process-wide metrics (CPU, memory, event loop); off in tests, where many apps share a process. */
  processMetrics?: boolean;
  /** Envelope encryption of recoverable keys; without it, recoverable/plaintext/decrypt requests are a 412. */
  vault?: Vault;
  /** One log line per request (KEYHOLD_ACCESS_LOG), through `logger`; off by default. */
  accessLog?: boolean;
  /** Failed root-key authentications per client address and minute before 429 (KEYHOLD_AUTH_FAILURE_LIMIT; 0: no limit). Default 100. */
  authFailureLimit?: number;
  /** OpenTelemetry spans of requests and Redis commands (src/tracing.ts); none when unset. */
  tracing?: RequestTracing & RedisTracing;
  /** Where users reach the server (KEYHOLD_PUBLIC_URL): dashboard cookies are Secure when it is https. */
  publicUrl?: string;
  /** Background retention passes (KEYHOLD_*_RETENTION_DAYS, KEYHOLD_PRUNE_INTERVAL_MINUTES); none when unset. */
  retention?: RetentionConfig;
  /** How long after the start the first retention pass runs (ms; default 60 s). */
  firstPrunePassDelayMs?: number;
  /** Single sign-on to the dashboard (KEYHOLD_OIDC_*); its provider's discovery is part of readiness. */
  oidc?: OidcConfig;
  /** Capacities of the buffers that fill while the store or Redis is down (tests use small ones; defaults otherwise). */
  capacities?: BufferCapacities;
  /** The leaked-key action and GitHub secret scanning (POST /secret-scanning/github when `github` is set). */
  leaks?: LeakConfig;
  /** KEYHOLD_WEBHOOK_* settings (default: Standard Webhooks' schedule, public https URLs only). */
  webhooks?: WebhookSettings;
  /** KEYHOLD_USAGE_* settings (when a closed period is reported); the scan's interval (ms; default 5 s; tests use less). */
  usage?: UsageSettings & { scanIntervalMs?: number };
  /** How long GET /v1/readiness waits for each dependency (ms; default READINESS_TIMEOUT_MS). */
  readinessTimeoutMs?: number;
}

export const BODY_LIMIT = 5 * 1024 * 1024;

// Bodies are validated exactly as sent (a string is never coerced to a number); query strings are
// coerced, since every query value arrives as a string. Every problem is reported, not only the first.
// strictNumbers: Infinity and NaN (what 1e400 parses to) are not numbers of any schema.
const bodyAjv = new Ajv({
  allErrors: true,
  coerceTypes: false,
  useDefaults: true,
  removeAdditional: true,
  strict: false,
  strictNumbers: true,
});
const queryAjv = new Ajv({
  allErrors: true,
  coerceTypes: true,
  useDefaults: true,
  removeAdditional: true,
  strict: false,
  strictNumbers: true,
});

/** Builds the HTTP application (never listens): hooks, error envelope, docs, metrics and every route. */
export async function buildApp({ store }: { store: Store }, options: AppOptions = {}): Promise<App> {
  // keys.verifyKey and ratelimits.limit over HTTP are answered by the lane (http/lane.ts), made once the
  // runtime exists; app.inject() always goes through Fastify's routes. The lane runs none of the hooks
  // (http/hooks.ts): what a hook adds to every response must be added to the lane too.
  let lane: Lane | undefined;
  const app = createFastify(options.logger, () => lane);

  const parseJson = installInputChecks(app);
  app.setErrorHandler(errorHandler);
  app.addSchema(ErrorEnvelope);
  app.addSchema(V2ErrorEnvelope);
  app.decorateRequest('caller', null as never);

  if (options.tracing) installRequestTracing(app, options.tracing);
  const metrics = createMetrics(options.processMetrics ?? false);
  const { accessLog, guard, internal } = installHooks(app, store, metrics, {
    ...options,
    rootKeyUsageCapacity: options.capacities?.rootKeyUses,
  });
  await registerDocs(app);

  const { redisUrl, logger, keyCacheSize, capacities, analytics, tracing, readinessTimeoutMs } = options;
  const runtimeOptions = { redisUrl, logger, keyCacheSize, capacities, analytics, tracing, readinessTimeoutMs };
  const runtime = await createRuntime(store, { ...runtimeOptions, caches: [guard] });
  app.addHook('onClose', () => runtime.close());
  const { verifier, limiter, cache, apis, readiness, ratelimits } = runtime;
  verifier.events = ratelimits.events = crossingEvents(app, store, options);
  const webhooks = options.webhooks ?? WEBHOOKS;
  const oidc = options.oidc ? new OidcClient(options.oidc, options.publicUrl ?? 'http://127.0.0.1') : undefined;
  const ready = withOidcReadiness(readiness, oidc);
  const usage = startUsageReports(app, store, options, webhooks);
  const deps: Deps = { store, vault: options.vault, verifier, limiter, cache, apis, readiness: ready, ratelimits, webhooks, usage };
  for (const register of ROUTES) register(app, deps);
  for (const register of V2_ROUTES) register(app, deps);
  registerOutsideTheApis(app, { deps, internal, options, parseJson, oidc });
  const pruner = startPruner(app, store, options);
  metrics.watch({ verifier, cache, health: runtime.health, jobs: () => jobQueueStats(store.db), pruner });
  metrics.watch({
    buffers: () => ({ ...runtime.buffers(), root_key_uses: { held: guard.heldUses, dropped: guard.droppedUses } }),
    webhooks: { outcomes: deliveryOutcomes, oldestPending: () => oldestPendingDelivery(store.db) },
    usageReports: reportOutcomes,
  });
  lane = appLane(deps, { guard, parseJson, metrics, accessLog }, options);
  app.addHook('preClose', (done) => {
    lane?.close();
    done();
  });

  registerOpenApiRoute(app);
  registerMetricsRoute(app, metrics);
  return app;
}

/**
 * The webhook events of verification crossings (their writes finish before the app closes), and the sweep
 * for key.expiring and key.expired (every second; expiry-sweep.ts).
 */
function crossingEvents(app: App, store: Store, options: AppOptions): CrossingEvents {
  // While the store is away nothing is logged per failure: the availability tracking logs the outage once, a
  // failed sweep or crossing drain is covered by the next one (every second; every 5 s), and a spend whose
  // crossing could not be recorded failed as a whole.
  const onError = (err: unknown) => {
    if (!isStoreUnavailable(err)) options.logger?.error({ err }, 'could not record a webhook event');
  };
  const events = new CrossingEvents(store.db, store.caps, onError, options.webhooks?.subscriptionsTtlMs);
  const stopSweeps = startExpirySweeps(store.db, onError);
  app.addHook('onClose', async () => {
    stopSweeps();
    await events.close();
  });
  return events;
}

/**
 * What usage exports' operations need, and the scan that reports their closed periods (usage/period-claims.ts),
 * stopped with the app.
 */
function startUsageReports(app: App, store: Store, options: AppOptions, webhooks: WebhookSettings): UsageContext {
  const { settleMs, scanIntervalMs } = { ...DEFAULT_USAGE_SETTINGS, ...options.usage };
  const onError = (err: unknown) => {
    if (!isStoreUnavailable(err)) options.logger?.error({ err }, 'could not report usage');
  };
  const stop = startUsageScans(store.db, { settleMs, retention: options.retention }, onError, scanIntervalMs);
  app.addHook('onClose', stop);
  return { db: store.db, vault: options.vault, webhooks, publicUrl: options.publicUrl ?? 'http://127.0.0.1' };
}

/** The lane (http/lane.ts) answering keys.verifyKey (v1, v2) and ratelimits.limit ahead of Fastify. */
function appLane(
  deps: Deps,
  parts: { guard: RootKeyGuard; parseJson: FastifyBodyParser<string>; metrics: ReturnType<typeof createMetrics>; accessLog?: AccessLog },
  options: AppOptions,
): Lane {
  return createLane({
    operations: [
      verifyKeyOperation(deps.verifier, guardedValidator(bodyAjv, VerifyKeyBody, 'body')),
      ratelimitsLimitOperation(parts.guard, deps.ratelimits, guardedValidator(bodyAjv, LimitBody, 'body')),
      verifyKeyV2Operation(parts.guard, deps, guardedValidator(bodyAjv, VerifyKeyV2Body, 'body')),
    ],
    parseJson: parts.parseJson,
    metrics: parts.metrics,
    logger: options.logger,
    accessLog: parts.accessLog,
    tracing: options.tracing,
  });
}

/** `GET /metrics`: the Prometheus text of `metrics`, without a root key. */
function registerMetricsRoute(app: App, metrics: ReturnType<typeof createMetrics>): void {
  app.get('/metrics', { schema: { hide: true }, config: { public: true } }, async (_req, reply) => {
    reply.header('Content-Type', metrics.registry.contentType);
    return metrics.registry.metrics();
  });
}

/** What is served outside /v1 and /v2: the dashboard, and GitHub's secret scanning endpoint when it is on. */
function registerOutsideTheApis(
  app: App,
  {
    deps,
    internal,
    options,
    parseJson,
    oidc,
  }: { deps: Deps; internal: InternalCallers; options: AppOptions; parseJson: FastifyBodyParser<string>; oidc?: OidcClient },
): void {
  registerDashboard(app, { deps, internal, publicUrl: options.publicUrl ?? 'http://127.0.0.1', oidc });
  registerGithubSecretScanning(app, deps, options.leaks ?? { action: 'disable' }, parseJson);
}

/** The background retention passes, stopped with the app; none without `options.retention`. Their stats, for /metrics. */
function startPruner(app: App, store: Store, options: AppOptions): PrunerStats | undefined {
  if (!options.retention) return undefined;
  const pruner = new Pruner(store, {
    retention: options.retention,
    firstPassDelayMs: options.firstPrunePassDelayMs,
    logger: options.logger,
  });
  pruner.start();
  app.addHook('onClose', () => pruner.stop());
  return pruner.stats;
}

/**
 * How bodies and queries are read and checked: only JSON bodies, through Fastify's own parser guarded by
 * http/input-guards.ts, and validators that run the input guards before the schema (compiled on a route's
 * first request: http/route-compilers.ts). Returns the JSON parser, which the lane uses too.
 */
function installInputChecks(app: App): FastifyBodyParser<string> {
  app.setValidatorCompiler(validatorCompiler({ body: bodyAjv, query: queryAjv }));
  app.removeContentTypeParser('text/plain');
  const parseJson = guardedJsonParser(
    app.getDefaultJsonParser(app.initialConfig.onProtoPoisoning ?? 'error', app.initialConfig.onConstructorPoisoning ?? 'error'),
  );
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, parseJson);
  return parseJson;
}

/** The Fastify instance: its server (the lane in front), limits, timeouts and the envelope for what fails before routing. */
function createFastify(logger: FastifyBaseLogger | undefined, lane: () => Lane | undefined): App {
  return Fastify({
    serverFactory: (handler, opts) => createLaneServer(handler, lane, opts),
    ...(logger ? { loggerInstance: logger } : { logger: false }),
    schemaController: { compilersFactory: { buildSerializer: serializerFactory } },
    // No log line per request (a large share of a fast route's cost): errors are logged, the rest counted in /metrics.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: BODY_LIMIT,
    genReqId: () => newId('req'),
    requestTimeout: 30_000,
    connectionTimeout: 60_000,
    // While closing, the server answers every request itself (a 503 in the envelope: http/connection-errors.ts).
    return503OnClosing: false,
    clientErrorHandler: answerClientError,
    // Failures Fastify meets before routing (a path that is not valid percent-encoding) get the envelope
    // and the request id too, instead of Fastify's own body.
    frameworkErrors: (err, request, reply) => {
      reply.header('X-Request-Id', request.id);
      if (err.code === 'FST_ERR_BAD_URL') return sendError(request, reply, 'request/invalid-body', 'The request path is not a valid URL');
      // A path segment longer than any id (over 100 characters) names nothing: not found, not a failure to log.
      if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') return sendError(request, reply, 'request/route-not-found', 'No resource at this path');
      return errorHandler(err, request, reply);
    },
  }).withTypeProvider<TypeBoxTypeProvider>() as App;
}
