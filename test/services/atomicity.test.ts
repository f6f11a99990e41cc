import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { DIALECTS, OPERATOR, freshStore, type Response, type World } from '../helpers/harness.ts';
import { faultyWorld, type StatementFaults } from '../helpers/faults.ts';
import { hashOf, newPlain } from '../helpers/migrations.ts';
import type { Database } from '../../src/store/schema.ts';
import { changeBus, type Change } from '../../src/services/changes.ts';
import { createMigration } from '../../src/services/migrations/migration-records.ts';
import { getIdentity, updateIdentity } from '../../src/services/identities/identities.ts';
import { AppError } from '../../src/domain/errors.ts';
import type { Caller } from '../../src/services/caller.ts';
import { ALL_TABLES, RETIRED_TABLES } from '../helpers/rows.ts';

/*
 * All or nothing, proven: every write use case reachable over HTTP is sent again and again, its N-th
 * statement failing (test/helpers/faults.ts) for N = 1, 2, … until a run executes fewer than N statements —
 * that last, un-armed run is the one that counts the statements, and it must succeed. Every failed run must
 * answer the 500 envelope and leave the store exactly as it was (every table's row count and every row,
 * audit_logs and change_feed included) and announce no change to the caches. Since a failed run changes
 * nothing, each N starts from the same state; when one does leak, the case is seeded anew (fresh rows) before
 * the next N, so every leaking statement of a case is reported at once.
 */

interface State {
  counts: Record<string, number>;
  rows: Record<string, string[]>;
}

/**
 * Every row of every table, as sorted JSON lines, and so the row count of every table (what rows.ts `snapshot`
 * counts, read from the same rows: half the statements, for hundreds of states per run).
 */
async function storeState(w: World): Promise<State> {
  const dumps = await Promise.all(
    ALL_TABLES.map(async (t) =>
      (await w.store.db.selectFrom(t).selectAll().execute()).map((r) => JSON.stringify(withoutBackground(t, r))).sort(),
    ),
  );
  return {
    counts: Object.fromEntries(ALL_TABLES.map((t, i) => [t, dumps[i].length])),
    rows: Object.fromEntries(ALL_TABLES.map((t, i) => [t, dumps[i]])),
  };
}

/**
 * A root key's last use is written by authentication in the background (RootKeyUsage), outside every use
 * case's transaction, whenever the write of an earlier use is done: it may land in any run, so it is not part
 * of a use case's state.
 */
function withoutBackground(table: string, row: object): object {
  if (table !== 'root_keys') return row;
  const { last_used_at: _, ...rest } = row as { last_used_at?: unknown };
  return rest;
}

/**
 * What differs between two states, table by table: `+` rows that appeared, `-` rows that went (a changed row is
 * both). Tables in `ignored` are left out.
 */
function stateDiff(a: State, b: State, ignored: ReadonlyArray<keyof Database> = []): string {
  const out: string[] = [];
  for (const t of ALL_TABLES) {
    if (ignored.includes(t)) continue;
    const before = new Set(a.rows[t]);
    const after = new Set(b.rows[t]);
    const added = b.rows[t].filter((r) => !before.has(r));
    const removed = a.rows[t].filter((r) => !after.has(r));
    if (a.counts[t] !== b.counts[t] || added.length || removed.length) {
      out.push(`${t} (${a.counts[t]} → ${b.counts[t]} rows)`, ...added.map((r) => `  + ${r}`), ...removed.map((r) => `  - ${r}`));
    }
  }
  return out.join('\n');
}

interface Request {
  path: string;
  body: unknown;
  key: string;
  /** The status of the request when nothing fails (default 200). */
  ok?: number;
  /** Runs before every attempt (verifyKey: drops the key from the cache, so every attempt reads it). */
  beforeEach?(): void;
  /** Checks the successful answer. */
  check?(res: Response): void;
  /** Waits for what the successful request set off in the background, before the next use case takes its states. */
  settle?(): Promise<void>;
  /** A read sent as POST: succeeding changes nothing either. */
  readOnly?: boolean;
  /** Tables that count attempts rather than hold state: a failed attempt may change them (the use case says why). */
  countsAttempts?: Array<keyof Database>;
}

interface UseCase {
  name: string;
  /** Creates fresh rows the request works on, in a new workspace of `w`, and returns the request. */
  seed(w: World): Promise<Request>;
}

/** The rate limits a test identity starts with (tenant().identity). */
const OLD_LIMITS = [{ name: 'old', limit: 5, duration: 1000 }];

/** A new workspace with a `*` root key, and helpers that create things in it over HTTP (outside any armed run). */
async function tenant(w: World) {
  const { root, workspaceId } = await w.otherWorkspace();
  const post = async (path: string, body: unknown) => {
    const res = await w.post(path, body, root);
    assert.equal(res.status, 200, `${path}: ${res.body}`);
    return res.json;
  };
  const apiId = await w.createApi('atomic', root);
  return {
    root,
    workspaceId,
    apiId,
    key: (body: Record<string, unknown> = {}) => w.createKey({ apiId, ...body }, root),
    role: async (name: string, permissions: string[] = []) =>
      String((await post('/v1/permissions.createRole', { name, permissions })).roleId),
    permission: async (name: string) => String((await post('/v1/permissions.createPermission', { name })).permissionId),
    identity: async (externalId: string) =>
      String((await post('/v1/identities.createIdentity', { externalId, meta: { v: 1 }, ratelimits: OLD_LIMITS })).identityId),
    post,
  };
}

/** A key with a bit of everything attached: identity, credits and refill, its own rate limit, a role, a permission. */
async function richKey(t: Awaited<ReturnType<typeof tenant>>) {
  await t.role('reader', ['read']);
  return t.key({
    name: 'rich',
    externalId: 'owner',
    meta: { v: 1 },
    remaining: 10,
    refill: { interval: 'daily', amount: 10 },
    ratelimit: { type: 'consistent', limit: 10, duration: 60_000 },
    roles: ['reader'],
    permissions: ['write'],
  });
}

const USE_CASES: UseCase[] = [
  {
    name: 'apis.createApi',
    seed: async (w) => ({ path: '/v1/apis.createApi', body: { name: 'atomic-new' }, key: (await tenant(w)).root }),
  },
  {
    name: 'apis.deleteApi (with live keys)',
    async seed(w) {
      const t = await tenant(w);
      await t.key();
      await richKey(t);
      return { path: '/v1/apis.deleteApi', body: { apiId: t.apiId }, key: t.root };
    },
  },
  {
    name: 'apis.deleteKeys (soft: every live key, one audit record each)',
    async seed(w) {
      const t = await tenant(w);
      await t.key();
      await richKey(t);
      return { path: '/v1/apis.deleteKeys', body: { apiId: t.apiId }, key: t.root };
    },
  },
  {
    name: 'apis.deleteKeys (permanent: live and soft-deleted rows, cascades)',
    async seed(w) {
      const t = await tenant(w);
      const { keyId } = await t.key({ recoverable: true, ratelimit: { limit: 1, duration: 1000 }, roles: ['r'], permissions: ['p'] });
      await richKey(t);
      await t.post('/v1/keys.deleteKey', { keyId });
      return { path: '/v1/apis.deleteKeys', body: { apiId: t.apiId, permanent: true }, key: t.root };
    },
  },
  {
    name: 'keys.createKey (recoverable: first data key; new identity, roles and permissions created, rate limit, refill)',
    async seed(w) {
      const t = await tenant(w);
      await t.role('existing');
      const body = {
        apiId: t.apiId,
        prefix: 'at',
        name: 'new',
        externalId: 'new-owner',
        meta: { plan: 'pro' },
        remaining: 100,
        refill: { interval: 'monthly', amount: 100, refillDay: 3 },
        ratelimit: { type: 'fast', limit: 5, duration: 1000 },
        roles: ['existing', 'created-role'],
        permissions: ['created.permission'],
        recoverable: true,
      };
      return { path: '/v1/keys.createKey', body, key: t.root };
    },
  },
  {
    name: 'keys.deleteKey (soft)',
    async seed(w) {
      const t = await tenant(w);
      return { path: '/v1/keys.deleteKey', body: { keyId: (await richKey(t)).keyId }, key: t.root };
    },
  },
  {
    name: 'keys.deleteKey (permanent: cascades)',
    async seed(w) {
      const t = await tenant(w);
      const { keyId } = await t.key({ recoverable: true, ratelimit: { limit: 1, duration: 1000 }, roles: ['r'], permissions: ['p'] });
      return { path: '/v1/keys.deleteKey', body: { keyId, permanent: true }, key: t.root };
    },
  },
  {
    name: 'keys.whoami (a read sent as POST)',
    async seed(w) {
      const t = await tenant(w);
      return { path: '/v1/keys.whoami', body: { key: (await richKey(t)).key }, key: t.root, readOnly: true };
    },
  },
  {
    name: 'keys.updateKey (every attribute, new identity, roles and permissions replaced and created)',
    async seed(w) {
      const t = await tenant(w);
      const { keyId } = await richKey(t);
      const body = {
        keyId,
        name: 'renamed',
        externalId: 'another-owner',
        meta: { v: 2 },
        expires: Date.now() + 86_400_000,
        remaining: 50,
        refill: { interval: 'monthly', amount: 50, refillDay: 2 },
        ratelimit: { type: 'fast', limit: 3, duration: 2000 },
        enabled: false,
        environment: 'test',
        roles: [{ name: 'fresh-role', create: true }],
        permissions: [{ slug: 'fresh.permission', create: true }],
      };
      return { path: '/v1/keys.updateKey', body, key: t.root };
    },
  },
  ...(['increment', 'decrement', 'set'] as const).map(
    (op): UseCase => ({
      name: `keys.updateRemaining (${op})`,
      async seed(w) {
        const t = await tenant(w);
        const { keyId } = await t.key({ remaining: 10 });
        return { path: '/v1/keys.updateRemaining', body: { keyId, op, value: 3 }, key: t.root };
      },
    }),
  ),
  ...(
    [
      ['keys.setRoles', 'roles', (names: string[]) => names.map((name) => ({ name, create: true }))],
      ['keys.addRoles', 'roles', (names: string[]) => names.map((name) => ({ name, create: true }))],
      ['keys.removeRoles', 'roles', (names: string[]) => names.slice(0, 1).map((name) => ({ name }))],
      ['keys.setPermissions', 'permissions', (names: string[]) => names.map((slug) => ({ slug, create: true }))],
      ['keys.addPermissions', 'permissions', (names: string[]) => names.map((slug) => ({ slug, create: true }))],
      ['keys.removePermissions', 'permissions', (names: string[]) => names.slice(0, 1).map((slug) => ({ slug }))],
    ] as const
  ).map(
    ([op, member, items]): UseCase => ({
      name: `${op} (connects, disconnects, creates)`,
      async seed(w) {
        const t = await tenant(w);
        // The key holds `held-1` and `held-2`; the request names `held-1` and a new one.
        const { keyId } = await t.key({ [member]: ['held-1', 'held-2'] });
        return { path: `/v1/${op}`, body: { keyId, [member]: items(['held-1', `new-${member}`]) }, key: t.root };
      },
    }),
  ),
  {
    name: 'permissions.createRole (attaching an existing and a created permission)',
    async seed(w) {
      const t = await tenant(w);
      await t.permission('existing');
      return {
        path: '/v1/permissions.createRole',
        body: { name: 'role', description: 'd', permissions: ['existing', 'created'] },
        key: t.root,
      };
    },
  },
  {
    name: 'permissions.deleteRole (held by keys, with permissions)',
    async seed(w) {
      const t = await tenant(w);
      await richKey(t);
      const roleId = await t.role('doomed', ['a', 'b']);
      await t.key({ roles: ['doomed'] });
      return { path: '/v1/permissions.deleteRole', body: { roleId }, key: t.root };
    },
  },
  {
    name: 'permissions.setRolePermissions (removes, keeps, creates)',
    async seed(w) {
      const t = await tenant(w);
      const roleId = await t.role('role', ['kept', 'removed']);
      return {
        path: '/v1/permissions.setRolePermissions',
        body: { roleId, permissions: [{ slug: 'kept' }, { slug: 'created', create: true }] },
        key: t.root,
      };
    },
  },
  {
    name: 'permissions.createPermission',
    seed: async (w) => ({
      path: '/v1/permissions.createPermission',
      body: { name: 'perm', slug: 'perm.slug' },
      key: (await tenant(w)).root,
    }),
  },
  {
    name: 'permissions.deletePermission (held by keys and roles)',
    async seed(w) {
      const t = await tenant(w);
      const permissionId = await t.permission('doomed');
      await t.role('holder', ['doomed']);
      await t.key({ permissions: ['doomed'], roles: ['holder'] });
      return { path: '/v1/permissions.deletePermission', body: { permissionId }, key: t.root };
    },
  },
  {
    name: 'identities.createIdentity (with rate limits)',
    seed: async (w) => ({
      path: '/v1/identities.createIdentity',
      body: {
        externalId: 'user',
        meta: { a: 1 },
        ratelimits: [
          { name: 'a', limit: 1, duration: 1000 },
          { name: 'b', limit: 2, duration: 2000 },
        ],
      },
      key: (await tenant(w)).root,
    }),
  },
  {
    name: 'identities.updateIdentity (meta and rate limits replaced)',
    async seed(w) {
      const t = await tenant(w);
      const identityId = await t.identity('user');
      const body = { identityId, meta: { v: 2 }, ratelimits: [{ name: 'new', limit: 7, duration: 3000 }] };
      return { path: '/v1/identities.updateIdentity', body, key: t.root };
    },
  },
  {
    name: 'identities.deleteIdentity (with keys and rate limits)',
    async seed(w) {
      const t = await tenant(w);
      const identityId = await t.identity('user');
      await t.key({ externalId: 'user' });
      return { path: '/v1/identities.deleteIdentity', body: { identityId }, key: t.root };
    },
  },
  {
    name: 'migrations.createKeys (plaintext: first data key; hash; new identity; roles, permissions, rate limit)',
    async seed(w) {
      const t = await tenant(w);
      await t.role('imported-role');
      await t.permission('imported.permission');
      const common = { apiId: t.apiId, externalId: 'importer', roles: ['imported-role'], permissions: ['imported.permission'] };
      const body = [
        { ...common, plaintext: newPlain(), remaining: 5, ratelimit: { limit: 5, refillInterval: 1000 } },
        { ...common, hash: hashOf(newPlain()), meta: { m: 1 } },
      ];
      return { path: '/v1/migrations.createKeys', body, key: t.root };
    },
  },
  {
    name: 'migrations.enqueueKeys (plaintext: first data key; hash)',
    async seed(w) {
      const t = await tenant(w);
      const { migrationId } = await createMigration(w.store.db, t.workspaceId, 'atomic', OPERATOR);
      const body = { migrationId, apiId: t.apiId, keys: [{ plaintext: newPlain(), prefix: 'imp' }, { hash: hashOf(newPlain()) }] };
      return { path: '/v1/migrations.enqueueKeys', body, key: t.root, ok: 202 };
    },
  },
  {
    name: 'keys.verifyKey (spends a credit; the key is read from the store every time)',
    async seed(w) {
      const t = await tenant(w);
      const { key, keyId } = await t.key({ remaining: 3, roles: ['r'] });
      return {
        path: '/v1/keys.verifyKey',
        body: { key, remaining: { cost: 2 } },
        key: t.root,
        // Every attempt reads the key (else an attempt after one that failed at the spend would find it cached).
        beforeEach: () => changeBus.emit('committed', [{ kind: 'key', id: keyId }]),
        // The verification's analytics are written about a second later, in the background.
        settle: () => analyticsFlushed(w, keyId),
        check: (res) => assert.deepEqual([res.json.valid, res.json.code, res.json.remaining], [true, 'VALID', 1]),
      };
    },
  },
  {
    name: 'keys.verifyKey (a consistent rate limit in the store, then a credit)',
    async seed(w) {
      const t = await tenant(w);
      const { key, keyId } = await t.key({ remaining: 3, ratelimit: { type: 'consistent', limit: 10, duration: 60_000 } });
      return {
        path: '/v1/keys.verifyKey',
        body: { key },
        key: t.root,
        beforeEach: () => changeBus.emit('committed', [{ kind: 'key', id: keyId }]),
        settle: () => analyticsFlushed(w, keyId),
        check: (res) => assert.deepEqual([res.json.valid, res.json.code, res.json.remaining], [true, 'VALID', 2]),
        // A rate limit counts the verifications that reached it, whatever became of them (RATE_LIMITED, USAGE_EXCEEDED,
        // or a failure after it, like a failed credit spend): its window unit is used. The credits stay exact.
        countsAttempts: ['ratelimit_counters'],
      };
    },
  },
];

/** Resolves once the analytics of `keyId`'s verifications are in the store (the recorder flushes every second). */
async function analyticsFlushed(w: World, keyId: string): Promise<void> {
  for (let waited = 0; ; waited += 25) {
    if (await w.store.db.selectFrom('analytics_key_verifications').select('key_id').where('key_id', '=', keyId).executeTakeFirst()) return;
    assert.ok(waited < 5000, 'the analytics of the verification were never written');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** The problems of a failed attempt's answer: anything but the 500 envelope. */
function answerProblems(res: Response): string[] {
  const problems: string[] = [];
  if (res.status !== 500) problems.push(`status ${res.status}, not 500: ${res.body.slice(0, 300)}`);
  else {
    const { error, meta } = res.json;
    if (error?.status !== 500 || error?.type !== 'https://keyhold.dev/errors/internal')
      problems.push(`not the internal envelope: ${res.body}`);
    if (meta?.requestId !== res.headers['x-request-id']) problems.push('meta.requestId is not X-Request-Id');
  }
  return problems;
}

/** The attempts of one use case; returns how many statements the request executes. Fails listing every leaking N. */
async function proveAllOrNothing(w: World, faults: StatementFaults, useCase: UseCase): Promise<number> {
  let req = await useCase.seed(w);
  let start = await storeState(w);
  const leaks: string[] = [];
  for (let n = 1; n <= 500; n++) {
    req.beforeEach?.();
    const announced: Change[][] = [];
    const listen = (changes: Change[]) => announced.push(changes);
    changeBus.on('committed', listen);
    const armed = await faults.run(() => w.post(req.path, req.body, req.key), n).finally(() => changeBus.off('committed', listen));
    const { value: res, statements, tripped } = armed;
    const now = await storeState(w);
    if (!tripped) {
      // The un-armed run: it executed n - 1 statements (the same path as every failed run) and did the use case's work.
      assert.equal(res.status, req.ok ?? 200, res.body);
      assert.equal(statements.length, n - 1, 'the request took another path');
      req.check?.(res);
      await req.settle?.();
      if (req.readOnly) assert.equal(stateDiff(start, now), '', 'a read changed the store');
      else assert.notEqual(stateDiff(start, now), '', 'the request succeeded but wrote nothing: not a write use case');
      assert.deepEqual(leaks, [], `${useCase.name}: failures that were not all or nothing:\n${leaks.join('\n')}`);
      return statements.length;
    }
    const problems = answerProblems(res);
    const diff = stateDiff(start, now, req.countsAttempts);
    if (diff) problems.push(`the store changed:\n${diff}`);
    if (announced.length) problems.push(`changes announced: ${JSON.stringify(announced)}`);
    if (problems.length) {
      leaks.push(`statement ${n} of ${statements.length} failed: ${statements[n - 1]}\n${problems.join('\n')}`);
      // Start the next N from the same state again: fresh rows for the request.
      if (diff) {
        req = await useCase.seed(w);
        start = await storeState(w);
      }
    }
  }
  assert.fail(`${useCase.name}: still running after 500 statements`);
}

for (const dialect of DIALECTS) {
  describe(`all or nothing (${dialect})`, () => {
    let w: World;
    let faults: StatementFaults;
    before(async () => {
      ({ w, faults } = await faultyWorld(dialect));
    });
    after(() => w.close());

    describe('the failure injection itself', () => {
      const insert = (db: World['store']['db'], name: string) =>
        db.insertInto('settings').values({ name, value: 'v', updated_at: 0 }).execute();
      const names = async (prefix: string) =>
        (await w.store.db.selectFrom('settings').select('name').where('name', 'like', `${prefix}%`).orderBy('name').execute()).map(
          (r) => r.name,
        );

      test('only the N-th statement of the armed run fails, before it reaches the database, with an Error that is not an AppError', async () => {
        let failure: unknown;
        const run = await faults.run(async () => {
          await insert(w.store.db, 'a1');
          await insert(w.store.db, 'a2').catch((err) => {
            failure = err;
          });
          await insert(w.store.db, 'a3');
        }, 2);
        assert.equal(run.tripped, true);
        assert.equal(run.statements.length, 3);
        assert.ok(failure instanceof Error && !(failure instanceof AppError));
        assert.deepEqual(await names('a'), ['a1', 'a3']);
        // Outside a run, nothing is counted or failed.
        await insert(w.store.db, 'a4');
        assert.deepEqual(await names('a'), ['a1', 'a3', 'a4']);
      });

      test('a transaction counts its begin and commit; a failure rolls it back (the rollback is neither counted nor failed)', async () => {
        const transaction = () =>
          w.store.db.transaction().execute(async (tx) => {
            await insert(tx, 'b1');
            await insert(tx, 'b2');
          });
        const unarmed = await faults.run(transaction);
        assert.deepEqual([unarmed.tripped, unarmed.statements.length], [false, 4]);
        for (let n = 1; n <= 4; n++) {
          await w.store.db.deleteFrom('settings').where('name', 'like', 'b%').execute();
          await assert.rejects(faults.run(transaction, n), /injected failure/);
          assert.deepEqual(await names('b'), [], `failure at statement ${n}`);
        }
      });
    });

    describe('every write use case under a failure of each of its statements', () => {
      test('ALL_TABLES lists every table of the store', async () => {
        const { rows } = await (w.store.caps.dialect === 'sqlite'
          ? sql<{ name: string }>`select name from sqlite_master where type = 'table'`
          : sql<{ name: string }>`select table_name as name from information_schema.tables where table_schema = current_schema()`
        ).execute(w.store.db);
        // Partitions of the raw analytics tables (PostgreSQL) are parts of their table, not tables of the schema.
        const tables = rows.map((r) => r.name).filter((name) => !/^(sqlite_|kysely_)/.test(name) && !/_(default|p\d{8})$/.test(name));
        assert.deepEqual(tables.sort(), [...ALL_TABLES, ...RETIRED_TABLES].sort());
      });

      for (const useCase of USE_CASES) {
        test(useCase.name, async (t) => {
          const statements = await proveAllOrNothing(w, faults, useCase);
          // Every use case reads and writes; the fewest is a verification with credits: the key's one read, the spend.
          assert.ok(statements >= 2, `only ${statements} statements`);
          t.diagnostic(`${statements} statements, each failed once`);
        });
      }
    });

    describe('failures the statements do not report', () => {
      test('identities.updateIdentity with a limit of 1e400 changes nothing, and the identity can still be read', async () => {
        const t = await tenant(w);
        const identityId = await t.identity('user');
        const start = await storeState(w);
        const res = await w.app.inject({
          method: 'POST',
          url: '/v1/identities.updateIdentity',
          headers: { authorization: `Bearer ${t.root}`, 'content-type': 'application/json' },
          // JSON.stringify cannot write it: 1e400 parses to Infinity.
          payload: `{"identityId":"${identityId}","meta":{"v":2},"ratelimits":[{"name":"r","limit":1e400,"duration":1000}]}`,
        });
        assert.ok(res.statusCode === 400 || res.statusCode === 500, res.body);
        assert.equal(res.json().error.status, res.statusCode);
        assert.equal(stateDiff(start, await storeState(w)), '');
        const read = await w.get('/v1/identities.getIdentity', { identityId }, t.root);
        assert.equal(read.status, 200, read.body);
        assert.deepEqual([read.json.meta, read.json.ratelimits], [{ v: 1 }, OLD_LIMITS]);
      });

      test('a number the columns cannot hold (Infinity, NaN) fails its statement inside the transaction: nothing is committed', async () => {
        // Below the HTTP bounds: the service called as the CLI or a future route would, with what JSON cannot say.
        const t = await tenant(w);
        const identityId = await t.identity('user');
        const caller: Caller = { workspaceId: t.workspaceId, rootKeyId: 'rk_test', permissions: new Set(['*']), requestId: 'req_test' };
        const start = await storeState(w);
        for (const limit of [Number.POSITIVE_INFINITY, Number.NaN]) {
          await assert.rejects(
            updateIdentity(w.store.db, caller, { identityId, meta: { v: 2 }, ratelimits: [{ name: 'r', limit, duration: 1000 }] }),
            (err) => !(err instanceof AppError),
          );
          assert.equal(stateDiff(start, await storeState(w)), '', `limit ${limit}`);
        }
        const view = await getIdentity(w.store.db, caller, { identityId });
        assert.deepEqual(
          [view.meta, view.ratelimits.map(({ name, limit, duration }) => ({ name, limit, duration }))],
          [{ v: 1 }, OLD_LIMITS],
        );
      });

      test('a committed change is answered as committed even when a listener of the change bus throws; the others still hear of it', async () => {
        const t = await tenant(w);
        const identityId = await t.identity('user');
        const heard: Change[][] = [];
        const throwing = () => {
          throw new Error('listener failure');
        };
        const hearing = (changes: Change[]) => heard.push(changes);
        changeBus.on('committed', throwing);
        changeBus.on('committed', hearing);
        try {
          const res = await w.post('/v1/identities.updateIdentity', { identityId, meta: { v: 2 } }, t.root);
          assert.equal(res.status, 200, res.body);
        } finally {
          changeBus.off('committed', throwing);
          changeBus.off('committed', hearing);
        }
        assert.deepEqual(heard, [[{ kind: 'identity', id: identityId }]]);
        const read = await w.get('/v1/identities.getIdentity', { identityId }, t.root);
        assert.deepEqual(read.json.meta, { v: 2 });
      });
    });
  });
}

describe('all or nothing: a transaction SQLite ended by itself (sqlite)', () => {
  test('statements issued after SQLite rolled the transaction back on an error are refused, not committed on their own', async () => {
    const { store, close } = await freshStore('sqlite');
    try {
      // RAISE(ROLLBACK) ends the whole transaction, as SQLITE_FULL or SQLITE_IOERR may.
      await sql`create trigger ends_transaction before insert on settings when new.name = 'fails'
        begin select raise(rollback, 'the transaction is rolled back'); end`.execute(store.db);
      const row = (name: string) => ({ name, value: 'v', updated_at: 0 });
      await assert.rejects(
        store.db.transaction().execute(async (tx) => {
          await tx.insertInto('settings').values(row('first')).execute();
          // Both issued at once: the second runs after the first failed and SQLite ended the transaction.
          await Promise.all([
            tx.insertInto('settings').values(row('fails')).execute(),
            tx.insertInto('settings').values(row('after')).execute(),
          ]);
        }),
        /rolled back/,
      );
      // The statement queued behind the failure must not have committed on its own.
      await new Promise((resolve) => setTimeout(resolve, 10));
      assert.deepEqual(await store.db.selectFrom('settings').select('name').execute(), []);
      // The connection is usable again, in and out of transactions.
      await store.db.transaction().execute((tx) => tx.insertInto('settings').values(row('later')).execute());
      assert.deepEqual(await store.db.selectFrom('settings').select('name').execute(), [{ name: 'later' }]);
    } finally {
      await close();
    }
  });
});
