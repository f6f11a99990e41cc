import { analyticsFrom, type AnalyticsConfig } from './analytics.ts';
import { bootstrapFrom, type BootstrapConfig } from './bootstrap.ts';
import { leakConfigFrom, type LeakConfig } from './leaks.ts';
import { oidcFrom, oidcSecrets, type OidcConfig } from './oidc.ts';
import { retentionFrom, type RetentionConfig } from './retention.ts';
import { serverFrom, type ServerConfig } from './server.ts';
import { ConfigError, secretsIn } from './shapes.ts';
import { storeFrom, type StoreConfig } from './store.ts';
import { tracingFrom, type TracingConfig } from './telemetry.ts';
import { usageFrom, type UsageSettings } from './usage.ts';
import { webhooksFrom, type WebhookSettings } from './webhooks.ts';

/*
 * The only reader of process.env. Each area's settings (types, defaults, parsing) live in their own file of
 * src/config/; loadConfig reads them all once into the Config the composition root (src/server.ts) hands down.
 * src/config/ imports nothing of the project but domain/'s pure rules (test/architecture.test.ts).
 */

/** Every setting, validated and typed. */
export interface Config extends ServerConfig, StoreConfig, BootstrapConfig {
  /** How long data that grows with traffic or time is kept, and how often the background pass prunes it (retention.ts). */
  retention: RetentionConfig;
  /** KEYHOLD_ANALYTICS and KEYHOLD_REGION: whether and where verifications and rate-limit checks are recorded (analytics.ts). */
  analytics: AnalyticsConfig;
  /** KEYHOLD_LEAKED_KEY_ACTION and GitHub secret scanning (leaks.ts). */
  leaks: LeakConfig;
  /** KEYHOLD_WEBHOOK_*: how webhooks are delivered (webhooks.ts). */
  webhooks: WebhookSettings;
  /** KEYHOLD_USAGE_*: when usage exports report a closed period (usage.ts). */
  usage: UsageSettings;
  /** Single sign-on to the dashboard (KEYHOLD_OIDC_*, oidc.ts); off when KEYHOLD_OIDC_ISSUER is unset. */
  oidc?: OidcConfig;
  /** OpenTelemetry traces (OTEL_*, telemetry.ts): on when an OTLP endpoint is set. */
  tracing: TracingConfig;
}

/** Every setting, or a ConfigError listing every problem (one line each, naming its setting and the fix). */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const problems: string[] = [];
  const server = serverFrom(env, problems);
  const store = storeFrom(env, problems);
  const config: Config = {
    ...server,
    ...store,
    ...bootstrapFrom(env, store.databaseUrl, problems),
    retention: retentionFrom(env, problems),
    analytics: analyticsFrom(env, problems),
    leaks: leakConfigFrom(env, problems),
    webhooks: webhooksFrom(env, problems),
    usage: usageFrom(env, problems),
    oidc: oidcFrom(env, problems),
    tracing: tracingFrom(env, problems),
  };
  if (problems.length) throw new ConfigError(problems);
  return config;
}

/** The secrets among the settings (URL passwords, master keys, bootstrap root key, OIDC client secret), never to be printed. */
export const settingSecrets = (env: NodeJS.ProcessEnv = process.env): string[] => [
  ...secretsIn({ urls: [env.DATABASE_URL, env.REDIS_URL], masterKeys: env.KEYHOLD_MASTER_KEYS, rootKey: env.KEYHOLD_BOOTSTRAP_ROOT_KEY }),
  ...oidcSecrets(env),
];
