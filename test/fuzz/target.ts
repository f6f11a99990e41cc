import fc from 'fast-check';
import { sql } from 'kysely';
import { createHash } from 'node:crypto';
import { OPERATOR, world, type World, type WorldOptions } from '../helpers/harness.ts';
import { DEFAULT_USAGE_SETTINGS } from '../../src/config/usage.ts';
import { ALL_TABLES, rootKeyId, type Db } from '../helpers/rows.ts';
import { createMigration } from '../../src/services/migrations/migration-records.ts';
import { createNamespace, findNamespaceByName } from '../../src/services/ratelimits/namespaces.ts';
import { resolveFrom, type Resolve, type Seeds } from './json-text.ts';
import { seedUsage } from './usage-seed.ts';
import { seedWebhook } from './webhook-seed.ts';
import { operationsOf, render, requestsFor, type FuzzRequest, type OpenApiDocument, type Operation, type Rendered } from './requests.ts';

/**
 * Runs the fuzz properties against a test world: every answer is below 500, carries X-Request-Id, and when
 * it is not a 2xx has the error envelope; a rejected request (≥ 400) writes nothing (row counts of every
 * table, in one statement); a 400 is at most 64 KiB. Used by routes.test.ts and by the long mode (run.ts).
 */

/**
 * Tables written in the background, by timers rather than by requests: analytics flushes (of verifications
 * and of ratelimits.limit decisions) and rate-limit counter syncs.
 */
export const BACKGROUND_TABLES: readonly string[] = [
  'key_verifications_hourly',
  'ratelimit_hourly',
  'ratelimit_counters',
  ...ALL_TABLES.filter((t) => t.startsWith('analytics_')),
];
export const MAX_400_BYTES = 64 * 1024;

/**
 * The worlds the fuzz runs against: the usage exports' period scan does not run (its timer is the longest one
 * Node takes, 24.8 days). A fuzzed createExport that succeeds (Stripe's default URL resolves wherever DNS works)
 * makes an enabled export, perhaps of period `minute`; the verifications fuzzed later would then have the scan
 * write a report and its job in the background, counted against whichever request was being checked.
 */
export const FUZZ_WORLD: WorldOptions = {
  app: {
    usage: { ...DEFAULT_USAGE_SETTINGS, scanIntervalMs: 2 ** 31 - 1 },
    // Readiness answers 503 when the store takes longer than its deadline (1 s by default): right for a load
    // balancer, but on a CI machine running many test files at once the fuzz's own store has taken longer. The
    // property checked is "no input gives a 5xx", so the store gets as long as any other request's statements.
    readinessTimeoutMs: 10_000,
  },
};

/** The OpenAPI document the app serves. */
export async function openApiOf(w: World): Promise<OpenApiDocument> {
  const res = await w.app.inject({ method: 'GET', url: '/openapi.json' });
  return JSON.parse(res.body);
}

/** The operations of the document the app serves, from an app on a scratch SQLite store (for test files to list their tests). */
export async function documentedOperations(): Promise<Operation[]> {
  const w = await world('sqlite');
  try {
    return operationsOf(await openApiOf(w));
  } finally {
    await w.close();
  }
}

type Part = 'permission' | 'role' | 'identity' | 'api' | 'key' | 'migration' | 'namespace' | 'override' | 'webhook' | 'usage';
const PARTS: Part[] = ['permission', 'role', 'identity', 'api', 'key', 'migration', 'namespace', 'override', 'webhook', 'usage'];
/** What a successful delete route removes of the seeds (any other delete route: everything is seeded anew). */
const DELETES: Record<string, Part[]> = {
  '/v1/apis.deleteApi': ['api', 'key'],
  '/v1/apis.deleteKeys': ['key'],
  '/v1/keys.deleteKey': ['key'],
  '/v1/permissions.deleteRole': ['role'],
  '/v1/permissions.deletePermission': ['permission'],
  '/v1/identities.deleteIdentity': ['identity'],
  '/v1/ratelimits.deleteNamespace': ['namespace', 'override'],
  '/v1/ratelimits.deleteOverride': ['override'],
  '/v1/webhooks.deleteEndpoint': ['webhook'],
  '/v1/usage.deleteExport': ['usage'],
  '/v2/apis.deleteApi': ['api', 'key'],
  '/v2/identities.deleteIdentity': ['identity'],
  '/v2/permissions.deleteRole': ['role'],
  '/v2/permissions.deletePermission': ['permission'],
};

/**
 * Seeds a workspace (or its `parts` anew, keeping the rest of `prev`): a permission, a role holding it, an
 * identity with a rate limit, an API, a key in it (credits, rate limit, the role, the permission, the
 * identity, recoverable), a migration, a rate-limit namespace with an override, a webhook endpoint with a delivery,
 * and a usage export with a report (test/fuzz/usage-seed.ts). The namespace is created
 * by the service, not by ratelimits.limit, so that seeding counts no rate-limit decision (analytics written
 * later, in the background, would change the workspace's rows after they were dumped).
 */
export async function seedWorkspace(w: World, root = w.root, workspaceId = w.workspaceId, prev?: Seeds, parts = PARTS): Promise<Seeds> {
  const s: Partial<Seeds> = { ...prev };
  const tag = createHash('sha256').update(String(Math.random())).digest('hex').slice(0, 10);
  const ok = async <T>(path: string, body: unknown): Promise<T> => {
    const r = await w.post<T>(path, body, root);
    if (r.status !== 200) throw new Error(`seeding: ${path} answered ${r.status} ${r.body}`);
    return r.json;
  };
  if (parts.includes('permission')) {
    s.permissionSlug = `fuzz.${tag}.read`;
    ({ permissionId: s.permissionId } = await ok<{ permissionId: string }>('/v1/permissions.createPermission', { name: s.permissionSlug }));
  }
  if (parts.includes('role')) {
    s.roleName = `fuzz-role-${tag}`;
    ({ roleId: s.roleId } = await ok<{ roleId: string }>('/v1/permissions.createRole', {
      name: s.roleName,
      permissions: [s.permissionSlug],
    }));
  }
  if (parts.includes('identity')) {
    s.externalId = `fuzz-user-${tag}`;
    const ratelimits = [{ name: 'fuzz', limit: 1000, duration: 60_000 }];
    ({ identityId: s.identityId } = await ok<{ identityId: string }>('/v1/identities.createIdentity', {
      externalId: s.externalId,
      ratelimits,
    }));
  }
  if (parts.includes('api')) s.apiId = await w.createApi(`fuzz-${tag}`, root);
  if (parts.includes('key')) {
    const { apiId, externalId, roleName, permissionSlug } = s;
    const ratelimit = { limit: 1000, duration: 60_000 };
    const body = {
      apiId,
      externalId,
      remaining: 1_000_000,
      ratelimit,
      roles: [roleName],
      permissions: [permissionSlug],
      meta: { fuzz: true },
    };
    ({ keyId: s.keyId, key: s.key } = await w.createKey({ ...body, recoverable: true }, root));
  }
  if (parts.includes('migration'))
    ({ migrationId: s.migrationId } = await createMigration(w.store.db, workspaceId, `fuzz-${tag}`, OPERATOR));
  if (parts.includes('namespace')) {
    s.namespaceName = `fuzz.ns.${tag}`;
    const caller = { workspaceId, rootKeyId: await rootKeyId(w, root), permissions: new Set(['*']), requestId: `req_fuzzseed${tag}` };
    await createNamespace(w.store.db, caller, s.namespaceName);
    s.namespaceId = (await findNamespaceByName(w.store.db, workspaceId, s.namespaceName))!.id;
  }
  if (parts.includes('override')) {
    s.overrideIdentifier = `fuzz-rl-${tag}`;
    const override = { namespaceId: s.namespaceId, identifier: s.overrideIdentifier, limit: 1000, duration: 60_000 };
    await ok<{ overrideId: string }>('/v1/ratelimits.setOverride', override);
  }
  if (parts.includes('webhook')) Object.assign(s, await seedWebhook(w, root, s.endpointId));
  if (parts.includes('usage')) Object.assign(s, await seedUsage(w, root, workspaceId, s.exportId));
  return s as Seeds;
}

export type Counts = Record<string, number>;

/**
 * A function returning the row count of every table (but the background ones), in one UNION ALL statement.
 * The change feed is pruned of rows over an hour old: only its rows created since `since` are counted.
 */
export function tableCounter(w: World): (since: number) => Promise<Counts> {
  const tables = ALL_TABLES.filter((t) => !BACKGROUND_TABLES.includes(t));
  const query = (since: number) =>
    sql.join(
      tables.map((t) =>
        t === 'change_feed'
          ? sql`select ${t} as t, count(*) as n from change_feed where created_at >= ${since}`
          : sql`select ${t} as t, count(*) as n from ${sql.id(t)}`,
      ),
      sql` union all `,
    );
  const db: Db = w.store.db;
  return async (since) =>
    Object.fromEntries((await sql<{ t: string; n: number }>`${query(since)}`.execute(db)).rows.map((r) => [r.t, Number(r.n)]));
}

export interface Answer {
  status: number;
  headers: Record<string, unknown>;
  body: string;
}

/** What is wrong with `res`, given the row counts before and after it. */
export function violations(res: Answer, before: Counts, after: Counts, path = ''): string[] {
  const out: string[] = [];
  if (res.status >= 500) out.push(`status ${res.status}`);
  const rid = res.headers['x-request-id'];
  if (typeof rid !== 'string' || !/^req_/.test(rid)) out.push(`X-Request-Id is ${JSON.stringify(rid)}`);
  if (res.status < 300) return out;
  out.push(...(path.startsWith('/v2/') ? v2EnvelopeProblems(res, rid) : envelopeProblems(res, rid)));
  if (res.status >= 400) {
    const changed = Object.keys(after).filter((t) => after[t] !== before[t]);
    if (changed.length) out.push(`rejected but wrote: ${changed.map((t) => `${t} ${before[t]} → ${after[t]}`).join(', ')}`);
  }
  if (res.status === 400 && Buffer.byteLength(res.body) > MAX_400_BYTES) out.push(`400 body of ${Buffer.byteLength(res.body)} bytes`);
  return out;
}

function envelopeProblems(res: Answer, rid: unknown): string[] {
  let json: { meta?: { requestId?: unknown }; error?: Record<string, unknown> };
  try {
    json = JSON.parse(res.body);
  } catch {
    return [`body is not JSON: ${res.body.slice(0, 200)}`];
  }
  const e = json?.error ?? {};
  const out: string[] = [];
  if (json?.meta?.requestId !== rid) out.push(`meta.requestId ${JSON.stringify(json?.meta?.requestId)} ≠ header ${rid}`);
  for (const m of ['title', 'detail', 'type', 'code']) if (typeof e[m] !== 'string' || !e[m]) out.push(`error.${m} missing`);
  if (e.status !== res.status) out.push(`error.status ${e.status} ≠ ${res.status}`);
  if (typeof e.type === 'string' && !e.type.startsWith('https://keyhold.dev/errors/')) out.push(`error.type ${e.type}`);
  if (e.message !== e.detail) out.push('error.message ≠ error.detail');
  if (e.docs !== e.type) out.push('error.docs ≠ error.type');
  if (e.requestId !== rid) out.push(`error.requestId ${JSON.stringify(e.requestId)} ≠ header ${rid}`);
  return out;
}

/** What is wrong with a /v2 error answer: v2's envelope (no v1 members), `errors` exactly on a 400. */
function v2EnvelopeProblems(res: Answer, rid: unknown): string[] {
  let json: { meta?: { requestId?: unknown }; error?: Record<string, unknown> };
  try {
    json = JSON.parse(res.body);
  } catch {
    return [`body is not JSON: ${res.body.slice(0, 200)}`];
  }
  const e = json?.error ?? {};
  const out: string[] = [];
  if (json?.meta?.requestId !== rid) out.push(`meta.requestId ${JSON.stringify(json?.meta?.requestId)} ≠ header ${rid}`);
  for (const m of ['title', 'detail', 'type']) if (typeof e[m] !== 'string' || !e[m]) out.push(`error.${m} missing`);
  if (e.status !== res.status) out.push(`error.status ${e.status} ≠ ${res.status}`);
  if (typeof e.type === 'string' && !e.type.startsWith('https://unkey.com/docs/errors/')) out.push(`error.type ${e.type}`);
  if ((res.status === 400) !== Array.isArray(e.errors)) out.push(`error.errors ${JSON.stringify(e.errors)} on a ${res.status}`);
  return out;
}

/** A world seeded for the fuzz, and how to send a request to it. */
export class Target {
  readonly w: World;
  seeds!: Seeds;
  counts!: (since: number) => Promise<Counts>;
  /** The counts after the last request, which are the next one's counts before (nothing else writes meanwhile). */
  last?: { since: number; counts: Counts };
  /** The error each failed request threw, by request id (what the server logs for a 500). */
  readonly errors = new Map<string, string>();
  /** Before the app's first request: it records what requests throw. */
  constructor(w: World) {
    this.w = w;
    w.app.addHook('onError', async (request, _reply, error) => {
      if (this.errors.size > 100) this.errors.clear();
      this.errors.set(request.id, (error.stack ?? String(error)).split('\n').slice(0, 4).join(' | '));
    });
  }
  async init(): Promise<this> {
    this.seeds = await seedWorkspace(this.w);
    this.counts = tableCounter(this.w);
    return this;
  }
  /** Seeds `parts` anew (default: all); the next count is taken afresh. */
  async reseed(parts?: Part[]): Promise<void> {
    this.seeds = await seedWorkspace(this.w, this.w.root, this.w.workspaceId, this.seeds, parts);
    this.last = undefined;
  }
  async send(r: Rendered): Promise<Answer> {
    const res = await this.w.app.inject({ method: r.method as 'GET', url: r.url, headers: r.headers, payload: r.payload });
    return { status: res.statusCode, headers: res.headers, body: res.body };
  }
}

/** What one run of a route's property saw. */
export interface RouteRun {
  cases: number;
  statuses: Record<string, number>;
  kinds: Record<string, number>;
  /** The failure, with fast-check's report (seed, path, counterexample); undefined when the property held. */
  failure?: string;
}

const short = (s: string, n = 300) => (s.length > n ? `${s.slice(0, n)}… (${s.length} chars)` : s);

/** Runs the property for one operation: `numRuns` requests from `seed`. */
export async function fuzzRoute(t: Target, op: Operation, numRuns: number, seed: number): Promise<RouteRun> {
  const run: RouteRun = { cases: 0, statuses: {}, kinds: {} };
  t.last = undefined;
  const resolve: Resolve = (ref) => resolveFrom(t.seeds)(ref);
  const property = fc.asyncProperty(fc.limitShrink(requestsFor(op, { seeded: 0.8 }), 40), async (req: FuzzRequest) => {
    const rendered = render(req, resolve, op.isPublic ? null : t.w.root);
    // Change-feed rows since 30..40 minutes ago: none of them is old enough (an hour) to be pruned meanwhile.
    const since = Math.floor((Date.now() - 30 * 60_000) / 600_000) * 600_000;
    const before = t.last?.since === since ? t.last.counts : await t.counts(since);
    const res = await t.send(rendered);
    const after = await t.counts(since);
    t.last = { since, counts: after };
    run.cases++;
    run.statuses[res.status] = (run.statuses[res.status] ?? 0) + 1;
    run.kinds[req.kind] = (run.kinds[req.kind] ?? 0) + 1;
    const problems = violations(res, before, after, op.path);
    // A seeded resource deleted: seed it anew, so that the next requests still reach past the lookups.
    if (res.status < 300 && /\.delete/.test(op.path)) await t.reseed(DELETES[op.path]);
    if (problems.length)
      throw new Error(
        `${problems.join('; ')}\n  request: ${rendered.method} ${short(rendered.url)} content-type=${rendered.headers['content-type']} ` +
          `body=${short(rendered.payload ?? '')}\n  answer: ${res.status} ${short(res.body)}` +
          (res.status >= 500 ? `\n  server error: ${t.errors.get(String(res.headers['x-request-id']))}` : ''),
      );
  });
  const details = await fc.check(property, { numRuns, seed });
  if (details.failed) {
    const error = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
    run.failure = `${fc.defaultReportMessage(details)}\n${error}`;
  }
  return run;
}

/** A seed per route, from the run's seed, so that a route replays alone: `KEYHOLD_FUZZ_SEED=<seed> KEYHOLD_FUZZ_ROUTE=<path>`. */
export const routeSeed = (runSeed: number, path: string): number =>
  createHash('sha256').update(`${runSeed}:${path}`).digest().readInt32LE(0);
