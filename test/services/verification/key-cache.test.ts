import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { KeyCache } from '../../../src/services/verification/key-cache.ts';
import type { KeyRecord } from '../../../src/services/verification/key-record.ts';

const record = (i: number, extra: Partial<KeyRecord> = {}) =>
  ({ id: `key_${i}`, hash: `hash_${i}`, apiId: 'api_1', workspaceId: 'ws_1', ...extra }) as KeyRecord;

/** A loader that counts its calls and answers from `known` (absent: unknown). */
function loader(known: Map<string, KeyRecord>) {
  const calls: string[] = [];
  return {
    calls,
    load: async (hash: string) => {
      calls.push(hash);
      return known.get(hash) ?? null;
    },
  };
}

describe('KeyCache', () => {
  test('a hit reads nothing; a full cache drops the least recently used entry', async () => {
    const known = new Map([1, 2, 3].map((i) => [`hash_${i}`, record(i)]));
    const { calls, load } = loader(known);
    const cache = new KeyCache({ maxEntries: 2 });
    await cache.get('hash_1', load);
    await cache.get('hash_2', load);
    assert.equal(cache.get('hash_1', load), known.get('hash_1'), 'a hit answers synchronously');
    await cache.get('hash_3', load); // full: hash_2 was used least recently
    assert.deepEqual(calls, ['hash_1', 'hash_2', 'hash_3']);
    await cache.get('hash_1', load);
    await cache.get('hash_2', load);
    assert.deepEqual(calls, ['hash_1', 'hash_2', 'hash_3', 'hash_2']);
    assert.deepEqual(cache.stats, { hits: 2, misses: 4, unknownHits: 0, evictions: 2 });
    assert.equal(cache.size, 2);
    assert.equal(cache.capacity, 2);
  });

  test('entries expire after ttlMs', async () => {
    const { calls, load } = loader(new Map([['hash_1', record(1)]]));
    const cache = new KeyCache({ ttlMs: 1_000 });
    await cache.get('hash_1', load, 10_000);
    await cache.get('hash_1', load, 10_999);
    await cache.get('hash_1', load, 11_000);
    assert.equal(calls.length, 2);
  });

  test('concurrent misses of one hash share one load', async () => {
    const { calls, load } = loader(new Map([['hash_1', record(1)]]));
    const cache = new KeyCache();
    const results = await Promise.all(Array.from({ length: 50 }, () => cache.get('hash_1', load)));
    assert.equal(calls.length, 1);
    assert.ok(results.every((r) => r === results[0] && r?.id === 'key_1'));
  });

  test('an unknown hash is remembered for unknownTtlMs, then read again', async () => {
    const { calls, load } = loader(new Map());
    const cache = new KeyCache({ unknownTtlMs: 1_000 });
    assert.equal(await cache.get('hash_x', load, 0), null);
    assert.equal(await cache.get('hash_x', load, 999), null);
    assert.equal(calls.length, 1);
    assert.equal(await cache.get('hash_x', load, 1_000), null);
    assert.equal(calls.length, 2);
    assert.equal(cache.stats.unknownHits, 1);
  });

  test('at most maxUnknown unknown hashes are remembered: a full set starts afresh', async () => {
    const { calls, load } = loader(new Map());
    const cache = new KeyCache({ maxUnknown: 2 });
    for (const h of ['a', 'b', 'a', 'b', 'c', 'c', 'a']) await cache.get(h, load);
    assert.deepEqual(calls, ['a', 'b', 'c', 'a']);
  });

  test('keys added (an import) forget every unknown hash; other kinds keep them', async () => {
    const known = new Map<string, KeyRecord>();
    const { calls, load } = loader(known);
    const cache = new KeyCache();
    assert.equal(await cache.get('hash_1', load), null);
    cache.invalidate([{ kind: 'api', id: 'api_1' }]);
    cache.invalidate([{ kind: 'namespace', id: 'rlns_1' }]);
    assert.equal(await cache.get('hash_1', load), null);
    assert.equal(calls.length, 1);
    known.set('hash_1', record(1));
    cache.invalidate([{ kind: 'keys-added', id: 'ws_1' }]);
    assert.equal((await cache.get('hash_1', load))?.id, 'key_1');
    assert.equal(calls.length, 2);
  });

  test('changes drop the records they make stale, by key, API, identity and workspace', async () => {
    const records = [
      record(1),
      record(2, { apiId: 'api_2' }),
      record(3, { apiId: 'api_2', identity: { id: 'id_1', externalId: 'e', meta: {} } }),
      record(4, { apiId: 'api_3', workspaceId: 'ws_2' }),
    ];
    const { calls, load } = loader(new Map(records.map((r) => [r.hash, r])));
    const cache = new KeyCache();
    const loadAll = () => Promise.all(records.map((r) => cache.get(r.hash, load)));
    const reloads = async (change: Parameters<KeyCache['invalidate']>[0][number]) => {
      await loadAll();
      const before = calls.length;
      cache.invalidate([change]);
      await loadAll();
      return calls.slice(before);
    };
    assert.deepEqual(await reloads({ kind: 'key', id: 'key_1' }), ['hash_1']);
    assert.deepEqual(await reloads({ kind: 'api', id: 'api_2' }), ['hash_2', 'hash_3']);
    assert.deepEqual(await reloads({ kind: 'identity', id: 'id_1' }), ['hash_3']);
    assert.deepEqual(await reloads({ kind: 'workspace', id: 'ws_1' }), ['hash_1', 'hash_2', 'hash_3']);
    assert.deepEqual(await reloads({ kind: 'unheard-of' as never, id: 'x' }), ['hash_1', 'hash_2', 'hash_3', 'hash_4']);
  });

  test('a load that raced with an invalidation is not cached, and later lookups do not join it', async () => {
    const pending: Array<(r: KeyRecord | null) => void> = [];
    const slow = (_hash: string) => new Promise<KeyRecord | null>((r) => pending.push(r));
    const cache = new KeyCache();
    const first = cache.get('hash_1', slow);
    cache.invalidate([{ kind: 'key', id: 'key_1' }]);
    const second = cache.get('hash_1', slow);
    assert.equal(pending.length, 2, 'the lookup after the change started its own load');
    pending[0](record(1));
    await first;
    assert.equal(cache.size, 0, 'loaded before the change: not cached');
    pending[1](record(1));
    await second;
    assert.equal(cache.size, 1, 'loaded after the change: cached');
  });
});
