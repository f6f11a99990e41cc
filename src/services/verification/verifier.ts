import { invalid, type FieldProblem } from '../../domain/errors.ts';
import { permissionQueryProblems, satisfies, type PermissionQuery } from '../../domain/permission-query.ts';
import { lastRefillDue, refillIsDue } from '../../domain/refill.ts';
import { hashKey } from '../../crypto/keys.ts';
import type { Db } from '../../store/store.ts';
import { currentRemaining, decrementCreditsIfEnough, refillIfDue } from '../keys/credits.ts';
import type { LimitRequest, LimitResult, RateLimiter } from './rate-limiter.ts';
import type { VerificationRecorder } from './verification-recorder.ts';
import { VERIFY_CODES, type VerifyCode } from '../../domain/verify-codes.ts';
import type { KeyCache } from './key-cache.ts';
import { CoalescedCounter, type GuardedOutcome } from './coalesced-counter.ts';
import type { ConfiguredLimit, KeyRecord, KeyRecordLoader } from './key-record.ts';
import type { CrossingEvents } from '../webhooks/crossing-events.ts';
import { findApi } from '../lookups.ts';

export interface VerifyRequest {
  key: string;
  apiId?: string;
  authorization?: { permissions: unknown };
  remaining?: { cost?: number };
  ratelimits?: Array<{ name: string; cost?: number; limit?: number; duration?: number }>;
  /** Recorded with the verification's analytics event, exactly as given (≤ 20, each 1–128 characters: the routes' schemas). */
  tags?: readonly string[];
}

export interface VerifyResponse {
  valid: boolean;
  code: VerifyCode;
  keyId?: string;
  name?: string;
  ownerId?: string;
  externalId?: string;
  meta?: Record<string, unknown>;
  expires?: number;
  remaining?: number;
  ratelimit?: { limit: number; remaining: number; reset: number };
  enabled?: boolean;
  permissions?: readonly string[];
  roles?: readonly string[];
  environment?: string;
  identity?: { id: string; externalId: string; meta: Record<string, unknown> };
  /**
   * Every limit this verification checked, with its decision (same order): v1 answers with one of them
   * (`ratelimit`), v2 with all. Not serialized by v1 (its response schema does not declare it).
   */
  limits?: { requests: AppliedLimit[]; results: LimitResult[] };
}

/**
 * Whether the caller may verify the loaded key, decided before any effect (credits, rate limits, analytics):
 * false answers NOT_FOUND, as for an unknown key (keys.verifyKey v2: the root key's workspace and verify_key).
 */
export type AuthorizeKey = (record: KeyRecord) => boolean;

/** What the verifier decided since it was made (plain counters, read by /metrics). */
export interface VerifierStats {
  /** Verifications by outcome. */
  outcomes: Record<VerifyCode, number>;
  /** Rate-limit decisions by limit type. */
  rateLimits: Record<LimitRequest['type'], { passed: number; denied: number }>;
}

export interface VerifierDeps {
  db: Db;
  cache: KeyCache;
  /** Loads a key on a cache miss (one statement). */
  records: KeyRecordLoader;
  limiter: RateLimiter;
  recorder?: VerificationRecorder;
}

/**
 * keys.verifyKey (docs/key-verification.md). Checks in order, first failure wins: NOT_FOUND → DISABLED → FORBIDDEN →
 * EXPIRED → INSUFFICIENT_PERMISSIONS → RATE_LIMITED → USAGE_EXCEEDED → VALID. A cached key without credits
 * costs no store read; credits are spent in the store, exactly (concurrent spends of one key share one
 * statement: see CoalescedCounter). Request errors (an invalid permission query, a rate limit that is
 * neither configured nor given inline) throw 400.
 */
export class Verifier {
  readonly #deps: VerifierDeps;
  /** Credits taken per key, concurrent spends of one key in one statement. */
  readonly #credits = new CoalescedCounter<undefined>(-1);
  readonly stats: VerifierStats = {
    outcomes: Object.fromEntries(VERIFY_CODES.map((code) => [code, 0])) as Record<VerifyCode, number>,
    rateLimits: { fast: { passed: 0, denied: 0 }, consistent: { passed: 0, denied: 0 } },
  };
  /** Webhook events of crossings (credits low or exhausted, refills, a window's first denial); set by the app. */
  events?: CrossingEvents;
  constructor(deps: VerifierDeps) {
    this.#deps = deps;
  }

  /** Verifies `req.key`; `authorize` (v2) sees the loaded key first and may answer NOT_FOUND before any effect. */
  async verify(req: VerifyRequest, now = Date.now(), authorize?: AuthorizeKey, requestId?: string): Promise<VerifyResponse> {
    const started = performance.now();
    const query = req.authorization?.permissions;
    if (req.authorization !== undefined) {
      const problems = permissionQueryProblems(query, '/authorization/permissions');
      if (problems.length) throw invalid(problems);
    }
    const record = await this.#record(hashKey(req.key), now);
    if (
      !record ||
      (authorize !== undefined && !authorize(record)) ||
      (req.apiId !== undefined && req.apiId !== record.apiId && !(await this.#sameWorkspaceApi(req.apiId, record.workspaceId)))
    ) {
      this.stats.outcomes.NOT_FOUND++;
      return { valid: false, code: 'NOT_FOUND' };
    }
    const result = await this.#check(record, req, query as PermissionQuery | undefined, now);
    this.stats.outcomes[result.code]++;
    this.#deps.recorder?.record({
      keyId: record.id,
      workspaceId: record.workspaceId,
      apiId: record.apiId,
      identityId: record.identity?.id ?? null,
      externalId: record.identity?.externalId ?? null,
      code: result.code,
      time: now,
      requestId,
      tags: req.tags,
      // Credits are spent only by a VALID verification of a key with credits (cost 0 spends none).
      spentCredits: result.code === 'VALID' && record.hasCredits ? (req.remaining?.cost ?? 1) : 0,
      latency: performance.now() - started,
    });
    return result;
  }

  /** The live key of `hash` (a hit costs no store read), or null. */
  #record(hash: string, now: number): KeyRecord | null | Promise<KeyRecord | null> {
    return this.#deps.cache.get(hash, this.#load, now);
  }

  readonly #load = (hash: string) => this.#deps.records.load(hash);

  /** An apiId that is not the key's: FORBIDDEN when it is a live API of the key's workspace, else NOT_FOUND. */
  async #sameWorkspaceApi(apiId: string, workspaceId: string): Promise<boolean> {
    return (await findApi(this.#deps.db, workspaceId, apiId)) !== undefined;
  }

  async #check(record: KeyRecord, req: VerifyRequest, query: PermissionQuery | undefined, now: number): Promise<VerifyResponse> {
    if (!record.enabled) return this.#withCredits(record, 'DISABLED');
    if (req.apiId !== undefined && req.apiId !== record.apiId) return this.#withCredits(record, 'FORBIDDEN');
    if (record.expires !== undefined && record.expires <= now) return this.#withCredits(record, 'EXPIRED');
    if (query !== undefined && !satisfies(query, record.permissionSet)) return this.#withCredits(record, 'INSUFFICIENT_PERMISSIONS');

    const limits = limitRequests(record, req.ratelimits);
    // The rate-limit members of the answer (v1's shown limit, every checked one for v2); none without limits.
    let limited: Partial<VerifyResponse> | undefined;
    if (limits.length) {
      const results = await this.#deps.limiter.check(limits, now);
      for (let i = 0; i < results.length; i++) this.stats.rateLimits[limits[i].type][results[i].passed ? 'passed' : 'denied']++;
      const shown = pickShownLimit(limits, results);
      limited = {
        ratelimit: { limit: shown.limit, remaining: shown.remaining, reset: shown.reset },
        limits: { requests: limits, results },
      };
      if (results.some((r) => !r.passed)) {
        for (let i = 0; i < results.length; i++)
          if (!results[i].passed) this.events?.keyLimitDenied(record, limits[i].name, results[i].reset);
        return this.#withCredits(record, 'RATE_LIMITED', limited);
      }
    }

    if (!record.hasCredits) return answerOf(record, 'VALID', limited);
    const { db } = this.#deps;
    if (record.refill && refillIsDue(record.refill, record.lastRefillAt, now)) {
      const due = lastRefillDue(record.refill, now);
      // With webhooks, the refill and its key.credits.refilled event commit together.
      if (this.events) await this.events.refill(record, record.refill.amount, due, now);
      else await refillIfDue(db, record.id, record.refill.amount, due, now);
      record.lastRefillAt = now; // done here or by another node: either way this period's refill happened
    }
    const cost = req.remaining?.cost ?? 1;
    if (cost === 0) return answerOf(record, 'VALID', { ...limited, remaining: (await currentRemaining(db, record.id)) ?? undefined });
    // With webhooks, a spend that crosses a credit threshold records the crossing with itself (one statement
    // on PostgreSQL): a coalesced spend is one statement, whose crossings are reported once each.
    const spend = async (amount: number): Promise<GuardedOutcome<undefined>> => {
      const left = this.events ? await this.events.spend(record, amount, now) : await decrementCreditsIfEnough(db, record.id, amount);
      return left === null ? { applied: false, value: undefined } : { applied: true, value: left };
    };
    const spent = await this.#credits.change(record.id, cost, spend);
    if (!spent.applied) return this.#withCredits(record, 'USAGE_EXCEEDED', limited);
    return answerOf(record, 'VALID', { ...limited, remaining: spent.value });
  }

  /** The answer of an outcome that spends nothing, with the key's credits left (read from the store) when it has credits. */
  async #withCredits(record: KeyRecord, code: VerifyCode, extra?: Partial<VerifyResponse>): Promise<VerifyResponse> {
    const remaining = record.hasCredits ? ((await currentRemaining(this.#deps.db, record.id)) ?? undefined) : undefined;
    return answerOf(record, code, { ...extra, remaining });
  }
}

/** The answer of every outcome but NOT_FOUND: the key's members, then `extra`'s (one object, built once). */
function answerOf(r: KeyRecord, code: VerifyCode, extra?: Partial<VerifyResponse>): VerifyResponse {
  const answer: VerifyResponse = {
    keyId: r.id,
    name: r.name,
    ownerId: r.identity?.externalId,
    externalId: r.identity?.externalId,
    meta: r.meta,
    expires: r.expires,
    enabled: r.enabled,
    permissions: r.permissions,
    roles: r.roles,
    environment: r.environment,
    identity: r.identity,
    valid: code === 'VALID',
    code,
  };
  return extra === undefined ? answer : Object.assign(answer, extra);
}

/** The limits of a verification that applies none: shared, so never added to (an answer uses limits only when there are some). */
const NO_LIMITS: AppliedLimit[] = [];

/** A limit one verification applies, with the key's configured limit it came from (none for an inline limit). */
export interface AppliedLimit extends LimitRequest {
  configured?: ConfiguredLimit;
}

/**
 * The limits one verification applies: every auto-applied configured limit at cost 1, then each requested
 * one — inline when it gives limit and duration (replacing a configured limit of that name), else the
 * configured limit of that name at the requested cost. A name that is neither → 400. Counters are per
 * identity when the key has one (its keys share them), else per key.
 */
function limitRequests(record: KeyRecord, requested: NonNullable<VerifyRequest['ratelimits']> | undefined): AppliedLimit[] {
  // Most keys have no limit and most requests ask for none: nothing to build.
  if (record.limits.size === 0 && !requested?.length) return NO_LIMITS;
  const identifier = record.identity?.id ?? record.id;
  const byName = new Map<string, AppliedLimit>();
  for (const l of record.limits.values()) {
    if (l.autoApply)
      byName.set(l.name, { identifier, name: l.name, limit: l.limit, duration: l.duration, cost: 1, type: l.type, configured: l });
  }
  const problems: FieldProblem[] = [];
  requested?.forEach((r, i) => {
    const cost = r.cost ?? 1;
    if (r.limit !== undefined && r.duration !== undefined) {
      byName.set(r.name, { identifier, name: r.name, limit: r.limit, duration: r.duration, cost, type: 'consistent' });
      return;
    }
    const configured = record.limits.get(r.name);
    if (!configured) {
      problems.push({
        path: `/ratelimits/${i}/name`,
        message: `ratelimit "${r.name}" was requested but is configured neither on key ${record.id}${record.identity ? ` nor on identity ${record.identity.id}` : ' (which has no identity)'}; give limit and duration inline`,
      });
      return;
    }
    byName.set(r.name, {
      identifier,
      name: r.name,
      limit: configured.limit,
      duration: configured.duration,
      cost,
      type: configured.type,
      configured,
    });
  });
  if (problems.length) throw invalid(problems);
  return [...byName.values()];
}

/** The limit the response shows: the first that rejected, else the key's `default`, else the first applied. */
function pickShownLimit(limits: LimitRequest[], results: LimitResult[]): LimitResult {
  const rejected = results.findIndex((r) => !r.passed);
  if (rejected >= 0) return results[rejected];
  const byDefault = limits.findIndex((l) => l.name === 'default');
  return results[Math.max(byDefault, 0)];
}
