import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, OPERATOR } from '../helpers/harness.ts';
import { freshCuttableStore, type CuttableStore } from '../helpers/outages.ts';
import type { Store } from '../../src/store/store.ts';
import { RatelimitRecorder } from '../../src/services/ratelimits/ratelimit-recorder.ts';
import { RootKeyUsage } from '../../src/services/workspaces/root-key-usage.ts';
import { createWorkspace } from '../../src/services/workspaces/workspaces.ts';
import { insertRootKey } from '../../src/services/workspaces/root-keys.ts';
import { FastCounters } from '../../src/services/verification/rate-limit-fast-counters.ts';
import { CLOCK_SKEW_MS, type Counters } from '../../src/services/verification/rate-limit-counters.ts';

/**
 * The caps of the buffers that fill while the store or Redis is down, below the HTTP layer (the verification
 * analytics through a server: test/system/outage-buffers.test.ts): each holds at most its capacity, the
 * entries beyond it are counted as dropped, and what it held is written once when the store returns.
 */

for (const dialect of DIALECTS) {
  describe(`outage buffers: rate-limit analytics and root-key last use (${dialect})`, () => {
    let direct: Store;
    let cuttable: CuttableStore;
    let close: () => Promise<void>;
    before(async () => {
      ({ direct, cuttable, close } = await freshCuttableStore(dialect));
    });
    after(() => close());

    test('RatelimitRecorder: capacity events kept through failed flushes, the oldest dropped and counted, written once after', async () => {
      const r = new RatelimitRecorder(cuttable.store.db, { capacity: 3, dialect });
      const ns = `rlns_cap_${dialect}`;
      const time = Date.now();
      const decide = (identifier: string, passed: boolean) =>
        r.record({ workspaceId: 'ws_cap', namespaceId: ns, identifier, passed, time });
      cuttable.cut();
      try {
        decide('a', true);
        decide('a', true);
        decide('b', false);
        assert.deepEqual([r.held, r.dropped], [3, 0]);
        decide('c', true); // a fourth event: the oldest (a) goes
        assert.deepEqual([r.held, r.dropped], [3, 1]);
        const flushing = r.flush();
        decide('e', true); // the flush has not taken the queue yet: the oldest (the second a) goes
        assert.deepEqual([r.held, r.dropped], [3, 2]);
        await assert.rejects(flushing);
        decide('d', true); // the failed batch is back, oldest first: b goes
        assert.deepEqual([r.held, r.buffered, r.dropped], [3, 3, 3]);
      } finally {
        cuttable.restore();
      }
      await r.flush();
      assert.deepEqual([r.held, r.dropped], [0, 3]);
      const rows = await direct.db
        .selectFrom('analytics_ratelimits_per_hour')
        .select(['identifier', 'passed', 'total'])
        .where('namespace_id', '=', ns)
        .orderBy('identifier')
        .execute();
      assert.deepEqual(
        rows.map((x) => [x.identifier, Number(x.passed), Number(x.total)]),
        [
          ['c', 1, 1],
          ['d', 1, 1],
          ['e', 1, 1],
        ],
      );
      const raw = await direct.db.selectFrom('analytics_ratelimits').select('identifier').where('namespace_id', '=', ns).execute();
      assert.equal(raw.length, 3, 'one raw event per recorded check, written once');
      decide('f', true);
      assert.deepEqual([r.held, r.dropped], [1, 3], 'room again once written');
    });

    test('RootKeyUsage: the last use of capacity keys kept through a failed write, the others dropped and counted, written after', async () => {
      const { workspaceId } = await createWorkspace(direct.db, 'usage', OPERATOR);
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push((await insertRootKey(direct.db, { workspaceId, permissions: ['*'] }, OPERATOR)).rootKeyId);
      const usage = new RootKeyUsage(cuttable.store.db, 3);
      const now = Date.now();
      cuttable.cut();
      try {
        for (const id of ids) usage.used(id, now);
        usage.used(ids[0], now + 1); // within the minute: not taken again
        assert.deepEqual([usage.held, usage.dropped], [3, 2]);
        await assert.rejects(usage.flush());
        assert.deepEqual([usage.held, usage.dropped], [3, 2], 'a failed write keeps what it held');
      } finally {
        cuttable.restore();
      }
      await usage.flush();
      assert.equal(usage.held, 0);
      const rows = await direct.db.selectFrom('root_keys').select(['id', 'last_used_at']).where('id', 'in', ids).execute();
      const lastUsed = new Map(rows.map((x) => [x.id, x.last_used_at === null ? null : Number(x.last_used_at)]));
      assert.deepEqual(
        ids.map((id) => lastUsed.get(id)),
        [now, now, now, null, null],
      );
    });
  });
}

describe('outage buffers: fast rate-limit counts while the shared counter is unreachable', () => {
  test('increments of a window that ended are let go and counted; those of a current window are kept for the next sync', async () => {
    const down = async (): Promise<never> => {
      throw new Error('Redis is down');
    };
    const unreachable: Counters = { addIfFits: down, add: down, read: down };
    const fast = new FastCounters(unreachable, 10);
    const now = Date.now();
    assert.equal(fast.decide('ended', 3, 10, now - CLOCK_SKEW_MS - 1)?.passed, true);
    assert.equal(fast.decide('current', 2, 10, now + 60_000)?.passed, true);
    await fast.sync().catch(() => {});
    assert.deepEqual([fast.size, fast.dropped], [1, 3]);
    await assert.rejects(fast.sync());
    assert.deepEqual([fast.size, fast.dropped], [1, 3], 'the current window keeps its increments');
    assert.equal(fast.decide('current', 8, 10, now + 60_000)?.passed, true, 'and decides on them: 2 + 8 fit in 10');
    assert.equal(fast.decide('current', 1, 10, now + 60_000)?.passed, false);
  });
});
