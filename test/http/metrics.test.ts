import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { buildApp } from '../../src/app.ts';
import { createMetrics } from '../../src/http/metrics.ts';
import type { App } from '../../src/http/types.ts';
import { enqueue } from '../../src/jobs/queue.ts';
import { DependencyHealth } from '../../src/services/dependency-health.ts';
import { KeyCache } from '../../src/services/verification/key-cache.ts';
import type { KeyRecord } from '../../src/services/verification/key-record.ts';
import { insertRootKey } from '../../src/services/workspaces/root-keys.ts';
import { createWorkspace } from '../../src/services/workspaces/workspaces.ts';
import type { Store } from '../../src/store/store.ts';
import '../../src/services/migrations/migration-import-task.ts';
import { DIALECTS, freshStore, OPERATOR } from '../helpers/harness.ts';
import { windowWithRoom } from '../helpers/timing.ts';

/** The value of one series of a Prometheus text exposition (`name{labels}`, labels as printed), or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

for (const dialect of DIALECTS) {
  describe(`/metrics after known traffic (${dialect})`, () => {
    let store: Store;
    let close: () => Promise<void>;
    let app: App;
    let root: string;
    before(async () => {
      ({ store, close } = await freshStore(dialect));
      const { workspaceId } = await createWorkspace(store.db, 'metrics', OPERATOR);
      ({ rootKey: root } = await insertRootKey(store.db, { workspaceId, permissions: ['*'] }, OPERATOR));
      app = await buildApp({ store });
    });
    after(async () => {
      await app.close();
      await close();
    });

    const post = async (url: string, payload: object, auth = true) =>
      (
        await app.inject({
          method: 'POST',
          url,
          payload,
          headers: { 'content-type': 'application/json', ...(auth ? { authorization: `Bearer ${root}` } : {}) },
        })
      ).json();

    test('verification outcomes (route and lane), key cache, rate-limit decisions and the job queue', async () => {
      const { apiId } = await post('/v1/apis.createApi', { name: 'metrics-api' });
      const plain = (await post('/v1/keys.createKey', { apiId })).key as string;
      const fast = (await post('/v1/keys.createKey', { apiId, ratelimit: { type: 'fast', limit: 1, duration: 60_000 } })).key as string;
      const consistent = (await post('/v1/keys.createKey', { apiId, ratelimit: { type: 'consistent', limit: 1, duration: 60_000 } })).key;
      const unknown = 'nobody_KnowsThisKey1234';
      const verify = async (key: string) => (await post('/v1/keys.verifyKey', { key }, false)).code as string;
      // The limits (1 a minute) count in windows aligned to the minute: each key's two verifications in one window.
      await windowWithRoom(60_000, 5_000);

      assert.deepEqual(
        [await verify(plain), await verify(plain), await verify(unknown), await verify(fast), await verify(fast)],
        ['VALID', 'VALID', 'NOT_FOUND', 'VALID', 'RATE_LIMITED'],
      );
      assert.deepEqual([await verify(consistent), await verify(consistent)], ['VALID', 'RATE_LIMITED']);
      // Two more through the verification lane (a real connection): counted the same way.
      const address = await app.listen({ host: '127.0.0.1', port: 0 });
      for (const key of [plain, unknown]) {
        const res = await fetch(`${address}/v1/keys.verifyKey`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ key }),
        });
        assert.equal(res.status, 200);
      }
      const now = Date.now();
      await enqueue(store.db, 'migration.import', {} as never, { now: now - 5_000 });
      await enqueue(store.db, 'migration.import', {} as never, { now });

      const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
      assert.deepEqual(
        {
          valid: sample(text, 'keyhold_verifications_total{code="VALID"}'),
          notFound: sample(text, 'keyhold_verifications_total{code="NOT_FOUND"}'),
          rateLimited: sample(text, 'keyhold_verifications_total{code="RATE_LIMITED"}'),
          expired: sample(text, 'keyhold_verifications_total{code="EXPIRED"}'),
        },
        { valid: 5, notFound: 2, rateLimited: 2, expired: 0 },
      );
      // Misses: the first look at each of the 3 keys and at the unknown one; its second look is answered by
      // the remembered unknown hash; every other look is a hit.
      assert.equal(sample(text, 'keyhold_key_cache_misses_total'), 4);
      assert.equal(sample(text, 'keyhold_key_cache_unknown_hits_total'), 1);
      assert.equal(sample(text, 'keyhold_key_cache_hits_total'), 4);
      assert.equal(sample(text, 'keyhold_key_cache_evictions_total'), 0);
      assert.equal(sample(text, 'keyhold_key_cache_entries'), 3);
      for (const type of ['fast', 'consistent']) {
        assert.equal(sample(text, `keyhold_ratelimit_decisions_total{type="${type}",decision="passed"}`), 1, type);
        assert.equal(sample(text, `keyhold_ratelimit_decisions_total{type="${type}",decision="denied"}`), 1, type);
      }
      assert.equal(sample(text, 'keyhold_jobs{status="pending"}'), 2);
      assert.equal(sample(text, 'keyhold_jobs{status="failed"}'), 0);
      const age = sample(text, 'keyhold_jobs_oldest_pending_age_seconds')!;
      assert.ok(age >= 5 && age < 120, `oldest pending job age ${age}`);
      assert.equal(sample(text, 'keyhold_dependency_up{dependency="store"}'), 1);
    });
  });
}

describe('metrics computed at scrape time', () => {
  test('dependency health: up, errors and outages per dependency', async () => {
    const metrics = createMetrics(false);
    const health = new DependencyHealth();
    metrics.watch({ health });
    health.recordSuccess('store');
    health.recordError('redis');
    health.recordError('redis');
    health.recordSuccess('redis');
    health.recordError('redis');
    const text = await metrics.registry.metrics();
    assert.equal(sample(text, 'keyhold_dependency_up{dependency="store"}'), 1);
    assert.equal(sample(text, 'keyhold_dependency_up{dependency="redis"}'), 0);
    assert.equal(sample(text, 'keyhold_dependency_errors_total{dependency="redis"}'), 3);
    assert.equal(sample(text, 'keyhold_dependency_outages_total{dependency="redis"}'), 2);
    assert.equal(sample(text, 'keyhold_dependency_errors_total{dependency="store"}'), 0);
  });

  test('key cache evictions, and a job queue that cannot be read leaves its gauges out of the scrape', async () => {
    const metrics = createMetrics(false);
    const cache = new KeyCache({ maxEntries: 2 });
    const record = (i: number) => ({ id: `key_${i}`, hash: `hash_${i}` }) as KeyRecord;
    for (let i = 0; i < 5; i++) await cache.get(`hash_${i}`, async () => record(i));
    await cache.get('hash_unknown', async () => null);
    await cache.get('hash_unknown', async () => null);
    metrics.watch({ cache, jobs: () => Promise.reject(new Error('store down')) });
    const text = await metrics.registry.metrics();
    assert.equal(sample(text, 'keyhold_key_cache_evictions_total'), 3);
    assert.equal(sample(text, 'keyhold_key_cache_entries'), 2);
    assert.equal(sample(text, 'keyhold_key_cache_capacity'), 2);
    assert.equal(sample(text, 'keyhold_key_cache_misses_total'), 6);
    assert.equal(sample(text, 'keyhold_key_cache_unknown_hits_total'), 1);
    assert.equal(sample(text, 'keyhold_jobs{status="pending"}'), undefined);
  });
});
