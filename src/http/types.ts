import type { FastifyBaseLogger, FastifyInstance, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Caller } from '../services/caller.ts';
import type { Store } from '../store/store.ts';
import type { Verifier } from '../services/verification/verifier.ts';
import type { RateLimiter } from '../services/verification/rate-limiter.ts';
import type { KeyCache } from '../services/verification/key-cache.ts';
import type { ApiCache } from '../services/apis/api-cache.ts';
import type { ReadinessReport } from '../services/readiness.ts';
import type { RatelimitContext } from '../services/ratelimits/limit.ts';
import type { Vault } from '../crypto/vault.ts';
import type { BodyRules } from './validation.ts';
import type { WebhookSettings } from '../config/webhooks.ts';
import type { UsageContext } from '../services/usage/exports.ts';

/** The Fastify instance routes are registered on, typed by their TypeBox schemas. */
export type App = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

/** What route handlers may use: the store, and the verification runtime's parts (built in app.ts from it). */
export interface Deps {
  store: Store;
  verifier: Verifier;
  limiter: RateLimiter;
  cache: KeyCache;
  /** Live APIs (keys.createKey). */
  apis: ApiCache;
  /** ratelimits.limit's limiter, namespace cache and analytics. */
  ratelimits: RatelimitContext;
  /** Checks the store and Redis now (GET /v1/readiness). */
  readiness(): Promise<ReadinessReport>;
  /** Absent when the server has no master keys: what needs the vault answers 412. */
  vault?: Vault;
  /** How webhooks are delivered, and which URLs they may go to. */
  webhooks: WebhookSettings;
  /** What usage exports need (the vault, the URL rules, the installation's public URL). */
  usage: UsageContext;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated root key; set before body parsing on every `/v1/` route that is not public. */
    caller: Caller;
  }
  interface FastifyContextConfig {
    /** No root key needed (liveness, keys.verifyKey). */
    public?: boolean;
    /** Cross-field rules of the body, reported together with its schema problems (see http/validation.ts). */
    bodyRules?: BodyRules;
  }
}
