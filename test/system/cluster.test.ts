import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { DIALECTS } from '../helpers/harness.ts';
import { sleep } from '../helpers/timing.ts';
import { Cluster, cli, type Server, type Verified } from './cluster-processes.ts';

/**
 * Real server processes (`src/main.ts`) sharing one store — and Redis when KEYHOLD_TEST_REDIS_URL is set —
 * proving the cluster guarantees of SPEC §5 and §8: credits are exact across processes, and deletion,
 * disabling, role changes and root-key revocation (by another server or by the CLI) reach every server
 * within 1 s. Measured propagation delays are printed as test diagnostics.
 */

const REDIS_URL = process.env.KEYHOLD_TEST_REDIS_URL;
const PROPAGATION_BOUND_MS = 1000;
const POLL_MS = 20;

/**
 * Polls `check` on a server every 20 ms, from `t0` (the moment the change's response arrived), until it
 * holds, for at most 1.5 s (a bit past the bound, so a slow propagation is measured, not only failed).
 * Returns the delay from t0 to the first response showing the change, or null if it never did.
 */
async function propagation(check: () => Promise<boolean>, t0: number): Promise<number | null> {
  while (Date.now() - t0 <= PROPAGATION_BOUND_MS + 500) {
    if (await check()) return Date.now() - t0;
    await sleep(POLL_MS);
  }
  return null;
}

/** Waits for each of `servers` to show the change; records the delays and asserts the 1 s bound. */
async function expectEverywhere(
  what: string,
  servers: Server[],
  check: (s: Server) => Promise<boolean>,
  t0: number,
  delays: Record<string, number[]>,
): Promise<void> {
  const measured = await Promise.all(servers.map((s) => propagation(() => check(s), t0)));
  delays[what] ??= [];
  delays[what].push(...measured.map((d) => d ?? Infinity));
  measured.forEach((d, i) => {
    assert.ok(
      d !== null && d <= PROPAGATION_BOUND_MS,
      `${what}: ${servers[i].name} showed it after ${d ?? '> 1500'} ms (bound ${PROPAGATION_BOUND_MS} ms)`,
    );
  });
}

/** Credits: `total` concurrent verifications spread round-robin over the cluster's servers, on `credits` credits. */
function creditsCase(c: Cluster, total: number, credits: number) {
  test(`${total} concurrent verifications over ${c.size} processes of a key with ${credits} credits → exactly ${credits} VALID`, async (t) => {
    const [first] = c.servers;
    const apiId = await c.createApi(first);
    const { keyId, key } = await c.createKey(first, { apiId, remaining: credits });
    const started = Date.now();
    const replies = await Promise.all(
      Array.from({ length: total }, (_, i) => c.servers[i % c.servers.length].post<Verified>('/v1/keys.verifyKey', { key })),
    );
    const elapsed = Date.now() - started;
    const counts: Record<string, number> = {};
    for (const r of replies) {
      const tag = r.status === 200 ? r.json.code : `HTTP ${r.status}`;
      counts[tag] = (counts[tag] ?? 0) + 1;
    }
    t.diagnostic(`[${c.label}] ${total} verifications in ${elapsed} ms: ${JSON.stringify(counts)}`);
    assert.deepEqual(counts, { VALID: credits, USAGE_EXCEEDED: total - credits });
    // Every VALID reported a distinct count left: 0..credits-1, each exactly once.
    const left = replies
      .filter((r) => r.json.code === 'VALID')
      .map((r) => r.json.remaining)
      .sort((a, b) => a - b);
    assert.deepEqual(
      left,
      Array.from({ length: credits }, (_, i) => i),
    );
    for (const s of c.servers) {
      const got = await s.get('/v1/keys.getKey', { keyId }, c.root);
      assert.equal(got.status, 200, JSON.stringify(got.json));
      assert.equal(got.json.remaining, 0, `${s.name}: getKey shows remaining 0`);
    }
    const row = await c.store.db.selectFrom('keys').select('remaining').where('id', '=', keyId).executeTakeFirstOrThrow();
    assert.equal(row.remaining, 0, 'the store holds remaining 0');
  });
}

/** Revocation, disabling, deletion, role changes and root-key revocation reach every server within 1 s. */
function propagationCases(c: Cluster) {
  const delays: Record<string, number[]> = {};
  let apiId: string;
  const verify = (s: Server, body: Record<string, unknown>) =>
    s.post<Verified>('/v1/keys.verifyKey', body).then((r) => {
      assert.equal(r.status, 200, JSON.stringify(r.json));
      return r.json.code;
    });
  const others = () => c.servers.slice(1);

  test('deleteKey on server 1 → NOT_FOUND on every other server within 1 s', async () => {
    const [a] = c.servers;
    apiId = await c.createApi(a);
    const { keyId, key } = await c.createKey(a, { apiId });
    for (const s of c.servers) assert.equal(await verify(s, { key }), 'VALID', `${s.name} verifies (and caches) the key`);
    const del = await a.post('/v1/keys.deleteKey', { keyId }, c.root);
    const t0 = Date.now();
    assert.equal(del.status, 200, JSON.stringify(del.json));
    assert.equal(await verify(a, { key }), 'NOT_FOUND', 'the deleting server sees it at once');
    await expectEverywhere('deleteKey → NOT_FOUND', others(), async (s) => (await verify(s, { key })) === 'NOT_FOUND', t0, delays);
  });

  test('updateKey {enabled:false} on server 1 → DISABLED on every other server within 1 s; re-enabling too', async () => {
    const [a] = c.servers;
    const { keyId, key } = await c.createKey(a, { apiId });
    for (const s of c.servers) assert.equal(await verify(s, { key }), 'VALID');
    let res = await a.post('/v1/keys.updateKey', { keyId, enabled: false }, c.root);
    let t0 = Date.now();
    assert.equal(res.status, 200, JSON.stringify(res.json));
    assert.equal(await verify(a, { key }), 'DISABLED');
    await expectEverywhere(
      'updateKey enabled:false → DISABLED',
      others(),
      async (s) => (await verify(s, { key })) === 'DISABLED',
      t0,
      delays,
    );
    res = await a.post('/v1/keys.updateKey', { keyId, enabled: true }, c.root);
    t0 = Date.now();
    assert.equal(res.status, 200, JSON.stringify(res.json));
    await expectEverywhere('updateKey enabled:true → VALID', others(), async (s) => (await verify(s, { key })) === 'VALID', t0, delays);
  });

  test('keys.setRoles and permissions.deleteRole on server 1 → the authorization outcome changes on every other server within 1 s', async () => {
    const [a] = c.servers;
    const role = await a.post('/v1/permissions.createRole', { name: `reporter_${randomInt(1e9)}`, permissions: ['reports.read'] }, c.root);
    assert.equal(role.status, 200, JSON.stringify(role.json));
    const { keyId, key } = await c.createKey(a, { apiId });
    const q = { key, authorization: { permissions: 'reports.read' } };
    for (const s of c.servers) assert.equal(await verify(s, q), 'INSUFFICIENT_PERMISSIONS', `${s.name} caches the key without the role`);
    const set = await a.post('/v1/keys.setRoles', { keyId, roles: [{ id: role.json.roleId }] }, c.root);
    let t0 = Date.now();
    assert.equal(set.status, 200, JSON.stringify(set.json));
    assert.equal(await verify(a, q), 'VALID');
    await expectEverywhere('setRoles → VALID', others(), async (s) => (await verify(s, q)) === 'VALID', t0, delays);
    const del = await a.post('/v1/permissions.deleteRole', { roleId: role.json.roleId }, c.root);
    t0 = Date.now();
    assert.equal(del.status, 200, JSON.stringify(del.json));
    await expectEverywhere(
      'deleteRole → INSUFFICIENT_PERMISSIONS',
      others(),
      async (s) => (await verify(s, q)) === 'INSUFFICIENT_PERMISSIONS',
      t0,
      delays,
    );
  });

  test('after a burst of 6,000 changes made elsewhere, a deleteKey on server 1 still reaches every other server within 1 s', async () => {
    const [a] = c.servers;
    const { keyId, key } = await c.createKey(a, { apiId });
    for (const s of c.servers) assert.equal(await verify(s, { key }), 'VALID');
    // As another process would commit them (e.g. a bulk keys.updateRemaining run): more than one page of the change feed.
    for (let i = 0; i < 6000; i += 500) {
      const at = Date.now();
      await c.store.db
        .insertInto('change_feed')
        .values(
          Array.from({ length: 500 }, (_, j) => ({
            id: `chg_burst_${randomInt(1e12)}_${i + j}`,
            kind: 'key',
            ref: `key_burst_${i + j}`,
            created_at: at,
          })),
        )
        .execute();
    }
    const del = await a.post('/v1/keys.deleteKey', { keyId }, c.root);
    const t0 = Date.now();
    assert.equal(del.status, 200, JSON.stringify(del.json));
    await expectEverywhere(
      'deleteKey after a 6,000-change burst → NOT_FOUND',
      others(),
      async (s) => (await verify(s, { key })) === 'NOT_FOUND',
      t0,
      delays,
    );
  });

  test('a root key created with the CLI works on the servers; revoked with the CLI → 401 on every server within 1 s', async () => {
    const b = c.servers[1];
    const { id: workspaceId } = await c.store.db.selectFrom('workspaces').select('id').executeTakeFirstOrThrow();
    const created = await cli<{ rootKeyId: string; rootKey: string }>(
      c.url,
      'root-keys',
      'create',
      '--workspace',
      workspaceId,
      '--permission',
      'api.*.read_api',
      '--name',
      'mp',
    );
    const read = (s: Server) => s.get('/v1/apis.getApi', { apiId }, created.rootKey);
    const first = await read(b);
    assert.equal(first.status, 200, JSON.stringify(first.json));
    assert.equal(first.json.id, apiId);
    for (const s of c.servers) assert.equal((await read(s)).status, 200, `${s.name} accepts the new root key`);
    await cli(c.url, 'root-keys', 'revoke', '--id', created.rootKeyId);
    const t0 = Date.now();
    await expectEverywhere(
      'CLI root-keys revoke → 401',
      c.servers,
      async (s) => {
        const r = await read(s);
        if (r.status === 401) assert.equal(r.json.error.type, 'https://keyhold.dev/errors/auth/revoked');
        return r.status === 401;
      },
      t0,
      delays,
    );
  });

  test('propagation delays (diagnostic)', (t) => {
    for (const [what, ms] of Object.entries(delays)) t.diagnostic(`[${c.label}] ${what}: ${ms.join(', ')} ms`);
  });
}

for (const dialect of DIALECTS) {
  if (dialect === 'postgres') {
    describe(`cluster: PostgreSQL, 3 server processes, ${REDIS_URL ? 'Redis' : 'no Redis'}`, () => {
      const c = new Cluster('postgres', 3, REDIS_URL !== undefined);
      before(() => c.start());
      after(() => c.close());
      creditsCase(c, 2000, 500);
      propagationCases(c);
    });
    if (REDIS_URL) {
      describe('cluster: PostgreSQL, 2 server processes, no Redis (change feed only)', () => {
        const c = new Cluster('postgres', 2, false);
        before(() => c.start());
        after(() => c.close());
        propagationCases(c);
      });
    }
  } else {
    describe('cluster: one SQLite file, 2 server processes', () => {
      const c = new Cluster('sqlite', 2, false);
      before(() => c.start());
      after(() => c.close());
      creditsCase(c, 2000, 500);
      propagationCases(c);
    });
  }
}
