import { describe, test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { DIALECTS, world, type World } from '../../helpers/harness.ts';
import { runCli } from '../../helpers/cli.ts';
import { buildApp } from '../../../src/app.ts';
import { loadRetentionConfig } from '../../../src/config/retention.ts';
import { agedFixture, expectedAfterPrune, snapshot } from './retention-fixture.ts';

/*
 * Retention, end to end: a store holding rows of every kind far past their retention (400 days) and well
 * inside it is pruned to the retentions by one `keyhold maintenance prune` and by the server's background
 * pass; every other row, every live key, API and root key, stays exactly as it was (row snapshots).
 */
const DEFAULTS = loadRetentionConfig({});

for (const dialect of DIALECTS) {
  describe(`retention (${dialect})`, () => {
    // Each test on a store of its own: the fixture's rows have fixed ids.
    let w: World;
    beforeEach(async () => {
      w = await world(dialect);
    });
    afterEach(() => w.close());

    test('keyhold maintenance prune removes exactly what is past its retention, and a second run nothing', async () => {
      const now = Date.now();
      const { liveKey } = await agedFixture(w, now);
      const before = await snapshot(w);
      const { after: expected, pruned } = expectedAfterPrune(before, now, DEFAULTS);
      assert.ok(
        Object.values(pruned).every((n) => n > 0),
        `the fixture has rows of every kind to remove: ${JSON.stringify(pruned)}`,
      );

      const r = await runCli<{ pruned: Record<string, number> }>({ DATABASE_URL: w.url }, ['maintenance', 'prune', '--json']);
      assert.equal(r.code, 0, r.err.join('\n'));
      assert.deepEqual(r.json.pruned, pruned);
      assert.deepEqual(await snapshot(w), expected);

      const again = await runCli<{ pruned: Record<string, number> }>({ DATABASE_URL: w.url }, ['maintenance', 'prune', '--json']);
      assert.ok(
        Object.values(again.json.pruned).every((n) => n === 0),
        JSON.stringify(again.json.pruned),
      );
      const verified = await w.post<{ valid: boolean }>('/v1/keys.verifyKey', { key: liveKey }, null);
      assert.equal(verified.json.valid, true);
    });

    test('0 keeps a kind forever; an invalid setting is refused before anything is removed', async () => {
      const now = Date.now();
      await agedFixture(w, now);
      const before = await snapshot(w);
      const forever = { KEYHOLD_ANALYTICS_RETENTION_DAYS: '0', KEYHOLD_AUDIT_RETENTION_DAYS: '0', KEYHOLD_DELETED_RETENTION_DAYS: '0' };
      const bad = await runCli<{ error: { detail: string } }>({ DATABASE_URL: w.url, KEYHOLD_AUDIT_RETENTION_DAYS: '-1' }, [
        'maintenance',
        'prune',
        '--json',
      ]);
      assert.equal(bad.code, 2);
      assert.match(JSON.stringify(bad.json), /KEYHOLD_AUDIT_RETENTION_DAYS must be/);
      assert.deepEqual(await snapshot(w), before);

      const r = await runCli<{ pruned: Record<string, number> }>({ DATABASE_URL: w.url, ...forever }, ['maintenance', 'prune', '--json']);
      assert.equal(r.code, 0, r.err.join('\n'));
      const retention = loadRetentionConfig(forever);
      const { after: expected, pruned } = expectedAfterPrune(before, now, retention);
      assert.deepEqual(r.json.pruned, pruned);
      for (const kind of ['verifications', 'ratelimit_analytics', 'audit_logs', 'deleted_keys', 'deleted_apis']) {
        assert.equal(r.json.pruned[kind], undefined, `${kind} is kept forever`);
      }
      assert.deepEqual(await snapshot(w), expected);
    });

    test('the background pass after a start prunes the same, and /metrics reports it', async () => {
      const now = Date.now();
      await agedFixture(w, now);
      const before = await snapshot(w);
      const { after: expected, pruned } = expectedAfterPrune(before, now, DEFAULTS);
      const app = await buildApp({ store: w.store }, { retention: DEFAULTS, firstPrunePassDelayMs: 10 });
      try {
        let metrics = '';
        for (let i = 0; i < 200 && !/keyhold_prune_last_pass_timestamp_seconds [1-9]/.test(metrics); i++) {
          await sleep(50);
          metrics = (await app.inject({ method: 'GET', url: '/metrics' })).body;
        }
        assert.match(metrics, /keyhold_prune_last_pass_timestamp_seconds [1-9]/);
        for (const [kind, n] of Object.entries(pruned)) {
          assert.match(metrics, new RegExp(`keyhold_pruned_rows_total\\{kind="${kind}"\\} ${n}\\n`), kind);
        }
        assert.deepEqual(await snapshot(w), expected);
      } finally {
        await app.close();
      }
    });
  });
}
