import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type Response, type World } from '../../../helpers/harness.ts';
import type { Loose } from '../../../helpers/json.ts';
import { securityTests } from '../../../helpers/security.ts';
import { errorPaths } from '../../../helpers/errors.ts';
import { count, rootKeyId, snapshot } from '../../../helpers/rows.ts';
import { unique } from '../../../helpers/rbac.ts';
import { sleep } from '../../../helpers/timing.ts';
import type { KyselyPlugin, QueryId, RootOperationNode } from 'kysely';
import { limit } from '../../../../src/services/ratelimits/limit.ts';
import { NamespaceCache } from '../../../../src/services/ratelimits/namespace-cache.ts';
import { createRateLimiter } from '../../../../src/services/verification/rate-limiter.ts';

/** The answer of ratelimits.limit. */
type LimitResult = Loose<{ success: boolean; limit: number; remaining: number; reset: number }>;

/** A window no test run crosses (366 days, the longest allowed), for tests that count. */
const LONG = 31_622_400_000;
/** The end of the fixed window of `duration` holding `t`. */
const windowEnd = (duration: number, t: number) => (Math.floor(t / duration) + 1) * duration;

/** Tables a namespace or override change writes: equal snapshots mean nothing was written. */
const RL_TABLES = ['ratelimit_namespaces', 'ratelimit_overrides', 'audit_logs', 'change_feed'] as const;

const send = (w: World, body: Record<string, unknown>, key?: string): Promise<Response> => w.post('/v1/ratelimits.limit', body, key);

/** ratelimits.limit, asserting a 200 whose body has exactly the four members. */
async function limitOk(w: World, body: Record<string, unknown>, key?: string): Promise<LimitResult> {
  const r = await w.post<LimitResult>('/v1/ratelimits.limit', body, key);
  assert.equal(r.status, 200, r.body);
  assert.deepEqual(Object.keys(r.json).sort(), ['limit', 'remaining', 'reset', 'success']);
  return r.json;
}

/** `[success, remaining]` of one call. */
const decide = async (w: World, body: Record<string, unknown>, key?: string): Promise<[boolean, number]> => {
  const r = await limitOk(w, body, key);
  return [r.success, r.remaining];
};

/** The stored namespace of this name in the workspace, if any. */
const namespaceRow = (w: World, name: string, workspaceId = w.workspaceId) =>
  w.store.db
    .selectFrom('ratelimit_namespaces')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('name', '=', name)
    .executeTakeFirst();

/** Creates the namespace `name` (by a cost-0 ratelimits.limit) with `key` of `workspaceId`, and returns its id. */
async function createNamespace(w: World, name: string, key = w.root, workspaceId = w.workspaceId): Promise<string> {
  await limitOk(w, { namespace: name, identifier: 'setup', limit: 1, duration: 1000, cost: 0 }, key);
  const row = await namespaceRow(w, name, workspaceId);
  assert.ok(row, `namespace ${name} was created`);
  return row.id;
}

/** A point queries wait at until it is opened; `entered` resolves when the first query reaches it. */
class Gate {
  readonly entered: Promise<void>;
  readonly opened: Promise<void>;
  #enter!: () => void;
  open!: () => void;
  constructor() {
    this.entered = new Promise((r) => {
      this.#enter = r;
    });
    this.opened = new Promise((r) => {
      this.open = r;
    });
  }
  async pass(): Promise<void> {
    this.#enter();
    await this.opened;
  }
}

/** A plugin holding back the results of the statements of `kind` on `table` (they have run) until `gate` opens. */
function gated(kind: 'InsertQueryNode' | 'SelectQueryNode', table: string, gate: Gate): KyselyPlugin {
  const held = new WeakSet<QueryId>();
  return {
    transformQuery(args) {
      const node: RootOperationNode = args.node;
      if (node.kind === kind && JSON.stringify(node).includes(JSON.stringify(table))) held.add(args.queryId);
      return node;
    },
    async transformResult(args) {
      if (held.has(args.queryId)) await gate.pass();
      return args.result;
    },
  };
}

for (const dialect of DIALECTS) {
  describe(`ratelimits.limit (${dialect})`, () => {
    let w: World;
    before(async () => {
      w = await world(dialect);
    });
    after(() => w.close());

    test('without a namespace: "default" is created on first use, audited once; the answer is {success, limit, remaining, reset}', async () => {
      assert.equal(await namespaceRow(w, 'default'), undefined);
      const t0 = Date.now();
      const res = await send(w, { identifier: 'user_1', limit: 10, duration: LONG });
      const t1 = Date.now();
      assert.equal(res.status, 200, res.body);
      const reset = res.json.reset as unknown as number;
      assert.ok(reset === windowEnd(LONG, t0) || reset === windowEnd(LONG, t1), `reset ${reset}`);
      assert.deepEqual(res.json, { success: true, limit: 10, remaining: 9, reset });

      const ns = await namespaceRow(w, 'default');
      assert.ok(ns);
      assert.match(ns.id, /^rlns_[1-9A-HJ-NP-Za-km-z]{22}$/);
      assert.ok(ns.created_at >= t0 && ns.created_at <= t1, `created_at ${ns.created_at}`);
      const audits = await w.store.db.selectFrom('audit_logs').selectAll().where('target_id', '=', ns.id).execute();
      assert.equal(audits.length, 1);
      const [a] = audits;
      assert.equal(a.event, 'ratelimitNamespace.create');
      assert.equal(a.workspace_id, w.workspaceId);
      assert.equal(a.target_type, 'ratelimitNamespace');
      assert.equal(a.actor_type, 'root_key');
      assert.equal(a.actor_id, await rootKeyId(w, w.root));
      assert.equal(a.request_id, res.headers['x-request-id']);
      assert.deepEqual(JSON.parse(a.diff!), { name: 'default' });

      // The second call counts in the same namespace and creates nothing.
      const before = await snapshot(w, RL_TABLES);
      assert.deepEqual(await decide(w, { identifier: 'user_1', limit: 10, duration: LONG }), [true, 8]);
      assert.deepEqual(await decide(w, { namespace: 'default', identifier: 'user_1', limit: 10, duration: LONG }), [true, 7]);
      assert.deepEqual(await snapshot(w, RL_TABLES), before);
      const got = await w.get('/v1/ratelimits.getNamespace', { namespaceName: 'default' });
      assert.deepEqual(got.json, { id: ns.id, name: 'default', createdAt: ns.created_at });
    });

    test('reset is the end of the fixed window: (floor(now / duration) + 1) * duration', async () => {
      const namespace = unique('windows');
      for (const duration of [1000, 1500, 60_000, 3_600_000, 86_400_000, LONG]) {
        const t0 = Date.now();
        const r = await limitOk(w, { namespace, identifier: `d${duration}`, limit: 5, duration });
        const t1 = Date.now();
        assert.ok(r.reset === windowEnd(duration, t0) || r.reset === windowEnd(duration, t1), `duration ${duration}: reset ${r.reset}`);
        assert.ok(r.reset > t0 && r.reset <= t1 + duration);
        assert.equal(r.limit, 5);
      }
    });

    test('cost: 1 by default, n consumes n, 0 reports the state without consuming', async () => {
      const base = { namespace: unique('costs'), identifier: 'u', limit: 10, duration: LONG };
      assert.deepEqual(await decide(w, { ...base, cost: 0 }), [true, 10]);
      assert.deepEqual(await decide(w, base), [true, 9]);
      assert.deepEqual(await decide(w, { ...base, cost: 4 }), [true, 5]);
      assert.deepEqual(await decide(w, { ...base, cost: 0 }), [true, 5]);
      assert.deepEqual(await decide(w, { ...base, cost: 0 }), [true, 5]);
      assert.deepEqual(await decide(w, { ...base, cost: 5 }), [true, 0]);
      assert.deepEqual(await decide(w, { ...base, cost: 0 }), [true, 0]);
      assert.deepEqual(await decide(w, base), [false, 0]);
    });

    test('a refused request consumes nothing (limit 3: cost 2 ok, cost 2 refused, cost 1 ok, then refused)', async () => {
      const base = { namespace: unique('refusals'), identifier: 'u', limit: 3, duration: LONG };
      assert.deepEqual(await decide(w, { ...base, cost: 2 }), [true, 1]);
      assert.deepEqual(await decide(w, { ...base, cost: 2 }), [false, 1]);
      assert.deepEqual(await decide(w, { ...base, cost: 2 }), [false, 1]);
      assert.deepEqual(await decide(w, { ...base, cost: 1 }), [true, 0]);
      assert.deepEqual(await decide(w, { ...base, cost: 1 }), [false, 0]);
      // A cost above the limit never fits; limit 0 refuses every cost above 0.
      const big = { ...base, identifier: 'big' };
      assert.deepEqual(await decide(w, { ...big, cost: 4 }), [false, 3]);
      assert.deepEqual(await decide(w, { ...big, cost: 3 }), [true, 0]);
      const zero = { ...base, identifier: 'zero', limit: 0 };
      assert.deepEqual(await decide(w, zero), [false, 0]);
      assert.deepEqual(await decide(w, { ...zero, cost: 0 }), [true, 0]);
    });

    test('identifiers and namespaces count separately; a changed limit or duration starts a fresh counter', async () => {
      const [n1, n2] = [unique('sep'), unique('sep')];
      const body = (namespace: string, identifier: string, limit = 2, duration = LONG) => ({ namespace, identifier, limit, duration });
      assert.deepEqual(await decide(w, body(n1, 'a')), [true, 1]);
      assert.deepEqual(await decide(w, body(n1, 'a')), [true, 0]);
      assert.deepEqual(await decide(w, body(n1, 'a')), [false, 0]);
      assert.deepEqual(await decide(w, body(n1, 'b')), [true, 1]);
      assert.deepEqual(await decide(w, body(n2, 'a')), [true, 1]);
      assert.deepEqual(await decide(w, body(n1, 'a', 3)), [true, 2]);
      assert.deepEqual(await decide(w, body(n1, 'a', 2, 3_600_000)), [true, 1]);
      // Identifiers are exact text: no case folding, no trimming.
      assert.deepEqual(await decide(w, body(n1, 'A')), [true, 1]);
      assert.deepEqual(await decide(w, body(n1, 'a ')), [true, 1]);
    });

    test('120 concurrent calls on limit 25 (sync): exactly 25 succeed, refused ones report 0 remaining', async () => {
      const base = { namespace: unique('burst'), identifier: 'u', limit: 25, duration: LONG };
      await createNamespace(w, base.namespace);
      const results = await Promise.all(Array.from({ length: 120 }, () => limitOk(w, base)));
      assert.equal(results.filter((r) => r.success).length, 25);
      for (const r of results.filter((r) => !r.success)) assert.equal(r.remaining, 0);
      assert.deepEqual(
        results
          .filter((r) => r.success)
          .map((r) => r.remaining)
          .sort((a, b) => a - b),
        Array.from({ length: 25 }, (_, i) => i),
      );
      assert.deepEqual(await decide(w, { ...base, cost: 0 }), [true, 0]);
    });

    test('120 first calls on a new namespace, concurrent and staggered: all 200, one namespace, one audit record, 25 succeed', async () => {
      const namespace = unique('fresh-burst');
      const calls: Array<Promise<Response>> = [];
      for (let i = 0; i < 120; i++) {
        calls.push(send(w, { namespace, identifier: 'u', limit: 25, duration: LONG }));
        // Arrivals spread over a few milliseconds: some find the namespace missing while others create it.
        if (i % 4 === 3) await new Promise((r) => (i % 8 === 3 ? setImmediate(r) : setTimeout(r, 1)));
      }
      const results = await Promise.all(calls);
      assert.deepEqual(
        results.filter((r) => r.status !== 200).map((r) => r.body),
        [],
      );
      assert.equal(results.filter((r) => r.json.success).length, 25);
      const rows = await w.store.db.selectFrom('ratelimit_namespaces').select('id').where('name', '=', namespace).execute();
      assert.equal(rows.length, 1);
      assert.equal(await count(w.store.db, 'audit_logs', ['target_id', rows[0].id]), 1);
    });

    test('async: true is exact on one node (25 of 120) and syncs to the shared counter in the background', async () => {
      const base = { namespace: unique('async-burst'), identifier: 'u', limit: 25, duration: LONG };
      await createNamespace(w, base.namespace);
      const results = await Promise.all(Array.from({ length: 120 }, () => limitOk(w, { ...base, async: true })));
      assert.equal(results.filter((r) => r.success).length, 25);
      assert.deepEqual(await decide(w, { ...base, async: true }), [false, 0]);
      // The synchronous path reads the shared counter: it sees the 25 once the node has synced.
      const deadline = Date.now() + 5000;
      let state = await decide(w, { ...base, cost: 0 });
      while (state[1] !== 0 && Date.now() < deadline) {
        await sleep(50);
        state = await decide(w, { ...base, cost: 0 });
      }
      assert.deepEqual(state, [true, 0]);
      assert.deepEqual(await decide(w, base), [false, 0]);
    });

    test("a namespace's counters never meet a key's rate limit of the same identifier and name", async () => {
      const apiId = await w.createApi('rl-collide');
      // One long window for all: a test crossing a window's end would see fresh counters.
      const { keyId, key } = await w.createKey({ apiId, ratelimit: { limit: 3, duration: LONG } });
      const verify = async () => {
        const r = await w.post('/v1/keys.verifyKey', { key }, null);
        assert.equal(r.status, 200, r.body);
        return [r.json.code, r.json.ratelimit.remaining];
      };
      assert.deepEqual(await verify(), ['VALID', 2]);
      // The key's default limit is named "default": a namespace named after the key, and the "default"
      // namespace with the key id as identifier, both count on their own.
      for (const [namespace, identifier] of [
        ['default', keyId],
        [keyId, 'default'],
      ]) {
        const body = { namespace, identifier, limit: 3, duration: LONG };
        assert.deepEqual(await decide(w, body), [true, 2]);
        assert.deepEqual(await decide(w, body), [true, 1]);
        assert.deepEqual(await decide(w, body), [true, 0]);
        assert.deepEqual(await decide(w, body), [false, 0]);
      }
      assert.deepEqual(await verify(), ['VALID', 1]);
      assert.deepEqual(await verify(), ['VALID', 0]);
      assert.deepEqual(await verify(), ['RATE_LIMITED', 0]);
    });

    test("another workspace's namespace of the same name is a different namespace, counted separately", async () => {
      const other = await w.otherWorkspace();
      const body = { namespace: unique('shared-name'), identifier: 'u', limit: 2, duration: LONG };
      assert.deepEqual(await decide(w, body), [true, 1]);
      assert.deepEqual(await decide(w, body), [true, 0]);
      assert.deepEqual(await decide(w, body), [false, 0]);
      assert.deepEqual(await decide(w, body, other.root), [true, 1]);
      assert.deepEqual(await decide(w, body, other.root), [true, 0]);
      const mine = await namespaceRow(w, body.namespace);
      const theirs = await namespaceRow(w, body.namespace, other.workspaceId);
      assert.ok(mine && theirs);
      assert.notEqual(mine.id, theirs.id);
      // Each workspace's audit log holds its own creation.
      const creations = await w.store.db
        .selectFrom('audit_logs')
        .select(['workspace_id', 'target_id'])
        .where('event', '=', 'ratelimitNamespace.create')
        .where('target_id', 'in', [mine.id, theirs.id])
        .orderBy('workspace_id')
        .execute();
      assert.deepEqual(
        creations.map((c) => `${c.workspace_id}:${c.target_id}`).sort(),
        [`${w.workspaceId}:${mine.id}`, `${other.workspaceId}:${theirs.id}`].sort(),
      );
    });

    test('meta and resources are accepted and not stored; unknown members are dropped, not rejected', async () => {
      const namespace = unique('extras');
      await createNamespace(w, namespace);
      const before = await snapshot(w, RL_TABLES);
      const r = await limitOk(w, {
        namespace,
        identifier: 'u',
        limit: 2,
        duration: LONG,
        meta: { plan: 'pro', nested: { a: [1] } },
        resources: [{ type: 'project', id: 'p_1', name: 'Project', meta: { x: 1 } }],
        tags: ['ignored'],
        whatever: { deep: true },
      });
      assert.deepEqual([r.success, r.limit, r.remaining], [true, 2, 1]);
      assert.deepEqual(await snapshot(w, RL_TABLES), before);
    });

    test('invalid members → 400 naming each; nothing written, nothing counted', async () => {
      const namespace = unique('invalid');
      await createNamespace(w, namespace);
      const valid = { namespace, identifier: 'u', limit: 5, duration: LONG };
      const before = await snapshot(w, RL_TABLES);
      const cases: Array<[Record<string, unknown>, string[]]> = [
        [{ ...valid, identifier: '' }, ['/identifier']],
        [{ ...valid, identifier: 'x'.repeat(256) }, ['/identifier']],
        [{ ...valid, identifier: 7 }, ['/identifier']],
        [{ ...valid, limit: -1 }, ['/limit']],
        [{ ...valid, limit: 1_000_000_000_001 }, ['/limit']],
        [{ ...valid, limit: 1.5 }, ['/limit']],
        [{ ...valid, limit: '5' }, ['/limit']],
        [{ ...valid, duration: 999 }, ['/duration']],
        [{ ...valid, duration: 0 }, ['/duration']],
        [{ ...valid, duration: 31_622_400_001 }, ['/duration']],
        [{ ...valid, cost: -1 }, ['/cost']],
        [{ ...valid, cost: 1_000_000_000_001 }, ['/cost']],
        [{ ...valid, cost: 0.5 }, ['/cost']],
        [{ ...valid, async: 'yes' }, ['/async']],
        [{ ...valid, namespace: '' }, ['/namespace']],
        [{ ...valid, namespace: 'n'.repeat(256) }, ['/namespace']],
        [{ ...valid, meta: 'x' }, ['/meta']],
        [{ namespace }, ['/duration', '/identifier', '/limit']],
        [{ ...valid, identifier: '', limit: -1, duration: 10, cost: -1 }, ['/cost', '/duration', '/identifier', '/limit']],
      ];
      for (const [body, paths] of cases) assert.deepEqual(errorPaths(await send(w, body)), paths, JSON.stringify(body).slice(0, 100));
      assert.deepEqual(await snapshot(w, RL_TABLES), before);
      // Nothing was counted, and a new namespace named in an invalid request was not created.
      assert.deepEqual(await decide(w, { ...valid, cost: 0 }), [true, 5]);
      assert.equal(errorPaths(await send(w, { namespace: unique('never'), identifier: '' })).length, 3);
      assert.deepEqual(await snapshot(w, RL_TABLES), before);
      // The bounds themselves are valid.
      const edge = { namespace, identifier: 'i'.repeat(255), limit: 1_000_000_000_000, duration: 31_622_400_000, cost: 1_000_000_000_000 };
      assert.deepEqual(await decide(w, edge), [true, 0]);
      assert.deepEqual(await decide(w, { ...edge, identifier: 'min', limit: 0, duration: 1000, cost: 0 }), [true, 0]);
    });

    const setOverride = async (body: Record<string, unknown>) => {
      const r = await w.post<{ overrideId: string }>('/v1/ratelimits.setOverride', body);
      assert.equal(r.status, 200, r.body);
      return r.json.overrideId;
    };

    test("an override replaces limit and duration for the identifiers it matches, exact or pattern; others keep the request's", async () => {
      const namespace = unique('overridden');
      const namespaceId = await createNamespace(w, namespace);
      await setOverride({ namespaceId, identifier: 'vip', limit: 3, duration: 3_600_000 });
      await setOverride({ namespaceName: namespace, identifier: 'team_*', limit: 2, duration: LONG });
      const body = (identifier: string, ns = namespace) => ({ namespace: ns, identifier, limit: 1, duration: 60_000 });

      const t0 = Date.now();
      const vip = await limitOk(w, body('vip'));
      const t1 = Date.now();
      assert.deepEqual([vip.success, vip.limit, vip.remaining], [true, 3, 2]);
      assert.ok(vip.reset === windowEnd(3_600_000, t0) || vip.reset === windowEnd(3_600_000, t1), `reset ${vip.reset}`);
      assert.deepEqual(await decide(w, body('vip')), [true, 1]);
      assert.deepEqual(await decide(w, body('vip')), [true, 0]);
      assert.deepEqual(await decide(w, body('vip')), [false, 0]);

      const team = await limitOk(w, body('team_a'));
      assert.deepEqual([team.success, team.limit, team.remaining], [true, 2, 1]);
      assert.ok(team.reset === windowEnd(LONG, t0) || team.reset === windowEnd(LONG, Date.now()), `reset ${team.reset}`);
      assert.deepEqual(await decide(w, body('team_a')), [true, 0]);
      assert.deepEqual(await decide(w, body('team_a')), [false, 0]);
      // Each identifier matching a pattern has its own counter; `*` matches the empty sequence.
      assert.deepEqual(await decide(w, body('team_b')), [true, 1]);
      assert.equal((await limitOk(w, body('team_'))).limit, 2);

      // Identifiers matching nothing, and the same identifiers in another namespace, keep the request's limit.
      for (const [identifier, ns] of [
        ['vip2', namespace],
        ['VIP', namespace],
        ['xteam_a', namespace],
        ['vip', unique('not-overridden')],
      ]) {
        const t = Date.now();
        const r = await limitOk(w, body(identifier, ns));
        assert.deepEqual([r.success, r.limit, r.remaining], [true, 1, 0], identifier);
        assert.ok(r.reset === windowEnd(60_000, t) || r.reset === windowEnd(60_000, Date.now()), identifier);
      }
    });

    test('override precedence end to end: exact, then the most literal pattern, then the oldest; changes apply at once', async () => {
      const namespace = unique('precedence');
      const namespaceId = await createNamespace(w, namespace);
      const set = (identifier: string, limit: number) => setOverride({ namespaceId, identifier, limit, duration: LONG });
      await set('*', 10);
      await set('user_*', 20);
      await set('user_a*', 30);
      await sleep(3); // strictly older than the next override of as many literal characters
      await set('*_admin', 25);
      await set('user_42', 40);
      const limitOf = async (identifier: string) => (await limitOk(w, { namespace, identifier, limit: 1, duration: 1000, cost: 0 })).limit;
      const expected: Record<string, number> = { user_42: 40, user_admin: 30, user_bob: 20, bob_admin: 25, bob: 10, user_: 20, _admin: 25 };
      for (const [identifier, limit] of Object.entries(expected)) assert.equal(await limitOf(identifier), limit, identifier);

      const del = async (identifier: string) =>
        assert.equal((await w.post('/v1/ratelimits.deleteOverride', { namespaceId, identifier })).status, 200);
      await del('user_a*');
      assert.equal(await limitOf('user_admin'), 25);
      await del('user_42');
      assert.equal(await limitOf('user_42'), 20);
      await set('*', 11);
      assert.equal(await limitOf('bob'), 11);
      await set('user_admin', 50);
      assert.equal(await limitOf('user_admin'), 50);
    });

    test("an override's async decides the mode; an override without one leaves it to the request", async () => {
      // A node meeting a counter for the first time in async mode decides from 0 (it learns the shared count at
      // its next sync); a sync decision reads the shared counter. So once the shared counter is full, a first
      // async request passes and a sync one is refused: the answer tells which mode decided.
      const namespace = unique('modes');
      const namespaceId = await createNamespace(w, namespace);
      const body = (identifier: string, async: boolean) => ({ namespace, identifier, limit: 1, duration: LONG, async });
      for (const id of ['free_1', 'free_2', 'sync_1', 'fast_1']) assert.deepEqual(await decide(w, body(id, false)), [true, 0]);
      await setOverride({ namespaceId, identifier: 'free_*', limit: 1, duration: LONG });
      await setOverride({ namespaceId, identifier: 'sync_*', limit: 1, duration: LONG, async: false });
      await setOverride({ namespaceId, identifier: 'fast_*', limit: 1, duration: LONG, async: true });
      assert.deepEqual(await decide(w, body('free_1', true)), [true, 0], 'no async in the override: the request asks for async');
      assert.deepEqual(await decide(w, body('free_2', false)), [false, 0], 'no async in the override: the request asks for sync');
      assert.deepEqual(await decide(w, body('sync_1', true)), [false, 0], "the override's async: false wins");
      assert.deepEqual(await decide(w, body('fast_1', false)), [true, 0], "the override's async: true wins");
    });

    test('ratelimit.<namespaceId>.limit alone is enough in an existing namespace; grants on another namespace are not', async () => {
      const namespace = unique('granted');
      const namespaceId = await createNamespace(w, namespace);
      const otherId = await createNamespace(w, unique('granted-other'));
      const body = { namespace, identifier: 'u', limit: 2, duration: LONG };
      assert.deepEqual(await decide(w, body, await w.rootKey([`ratelimit.${namespaceId}.limit`])), [true, 1]);
      assert.deepEqual(await decide(w, body, await w.rootKey(['ratelimit.*.limit'])), [true, 0]);
      for (const permissions of [
        [`ratelimit.${otherId}.limit`],
        [`ratelimit.${namespaceId}.read_namespace`, `ratelimit.${namespaceId}.set_override`, 'ratelimit.*.create_namespace'],
      ]) {
        const res = await send(w, { ...body, identifier: 'v' }, await w.rootKey(permissions));
        assert.equal(res.status, 403, res.body);
        assert.equal(res.json.error.code, 'INSUFFICIENT_PERMISSIONS');
        assert.equal(res.json.error.detail, `Missing permission: ratelimit.${namespaceId}.limit`);
      }
      assert.deepEqual(await decide(w, { ...body, identifier: 'v', cost: 0 }), [true, 2], 'nothing counted');
    });

    test('a namespace not yet existing needs ratelimit.*.create_namespace and ratelimit.*.limit: else 403 naming them, nothing written', async () => {
      const existingId = await createNamespace(w, unique('existing'));
      const cases: Array<[string, string[]]> = [
        ['Missing permission: ratelimit.*.create_namespace', ['ratelimit.*.limit']],
        ['Missing permission: ratelimit.*.limit', ['ratelimit.*.create_namespace']],
        ['Missing permission: ratelimit.*.limit', ['ratelimit.*.create_namespace', `ratelimit.${existingId}.limit`]],
        [
          'Missing permissions: ratelimit.*.create_namespace, ratelimit.*.limit',
          [`ratelimit.${existingId}.limit`, 'ratelimit.*.read_namespace'],
        ],
      ];
      const keys = await Promise.all(cases.map(([, permissions]) => w.rootKey(permissions)));
      const allowed = await w.rootKey(['ratelimit.*.create_namespace', 'ratelimit.*.limit']);
      const namespace = unique('not-yet');
      const body = { namespace, identifier: 'u', limit: 1, duration: LONG };
      const before = await snapshot(w, RL_TABLES);
      for (const [i, [detail]] of cases.entries()) {
        const res = await send(w, body, keys[i]);
        assert.equal(res.status, 403, res.body);
        assert.equal(res.json.error.type, 'https://keyhold.dev/errors/auth/insufficient-permissions');
        assert.equal(res.json.error.detail, detail);
      }
      assert.deepEqual(await snapshot(w, RL_TABLES), before);
      assert.equal(await namespaceRow(w, namespace), undefined);

      const res = await send(w, body, allowed);
      assert.equal(res.status, 200, res.body);
      assert.deepEqual([res.json.success, res.json.remaining], [true, 0]);
      const row = await namespaceRow(w, namespace);
      assert.ok(row);
      const audit = await w.store.db.selectFrom('audit_logs').selectAll().where('target_id', '=', row.id).execute();
      assert.deepEqual(
        audit.map((a) => [a.event, a.actor_id, a.request_id]),
        [['ratelimitNamespace.create', await rootKeyId(w, allowed), res.headers['x-request-id']]],
      );
      // From now on ratelimit.<namespaceId>.limit is enough.
      const r = await send(w, { ...body, identifier: 'v' }, await w.rootKey([`ratelimit.${row.id}.limit`]));
      assert.equal(r.status, 200, r.body);
    });

    test('a request creating a namespace never takes the answer of a load that read the store before the namespace was committed', async () => {
      const namespace = unique('raced-create');
      const limiter = createRateLimiter({ db: w.store.db });
      const cache = new NamespaceCache();
      const insertGate = new Gate();
      const selectGate = new Gate();
      const caller = {
        workspaceId: w.workspaceId,
        rootKeyId: await rootKeyId(w, w.root),
        permissions: new Set(['*']),
        requestId: 'req_race',
      };
      const ctx = {
        db: w.store.db.withPlugin(gated('InsertQueryNode', 'ratelimit_namespaces', insertGate)),
        limiter,
        namespaces: cache,
        recorder: { record() {} },
      };
      try {
        // Request A finds no namespace and inserts it; its transaction is held open.
        const a = limit(ctx, caller, { namespace, identifier: 'u', limit: 5, duration: LONG }).then(
          (ok) => ({ ok }),
          (err: Error) => ({ err }),
        );
        await insertGate.entered;
        // Request B looks the namespace up meanwhile: on PostgreSQL it reads the store before A's commit (no
        // namespace) and its answer is held back; on SQLite (one connection) it waits for A's transaction.
        const b = cache.get(w.store.db.withPlugin(gated('SelectQueryNode', 'ratelimit_namespaces', selectGate)), w.workspaceId, namespace);
        await Promise.race([selectGate.entered, sleep(300)]);
        insertGate.open();
        // A must not wait for B's stale load: it reads the namespace it just created.
        await Promise.race([a, sleep(1000)]);
        selectGate.open();
        const outcome = await a;
        assert.ok('ok' in outcome, `A failed: ${'err' in outcome ? outcome.err.message : ''}`);
        assert.deepEqual([outcome.ok.success, outcome.ok.limit, outcome.ok.remaining], [true, 5, 4]);
        await b;
        assert.equal((await w.store.db.selectFrom('ratelimit_namespaces').select('id').where('name', '=', namespace).execute()).length, 1);
      } finally {
        insertGate.open();
        selectGate.open();
        await limiter.close();
      }
    });

    // The permission names the namespace the request is about; `request` creates it, so read it afterwards.
    let securityNamespaceId = '<namespaceId>';
    securityTests(() => w, {
      get permission() {
        return `ratelimit.${securityNamespaceId}.limit`;
      },
      request: async (w) => {
        const namespace = unique('secure');
        securityNamespaceId = await createNamespace(w, namespace);
        return { method: 'POST', path: '/v1/ratelimits.limit', body: { namespace, identifier: 'u', limit: 5, duration: 60_000 } };
      },
    });
  });
}
