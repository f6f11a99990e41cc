import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, OPERATOR, freshStore } from '../helpers/harness.ts';
import { runCli } from '../helpers/cli.ts';
import type { CliAnswer } from '../helpers/json.ts';
import type { Store } from '../../src/store/store.ts';
import { createWorkspace } from '../../src/services/workspaces/workspaces.ts';
import { operatorCaller } from '../../src/services/caller.ts';
import { createVault } from '../../src/crypto/vault.ts';
import { createExport, getExport } from '../../src/services/usage/exports.ts';
import { reportDuePeriods } from '../../src/services/usage/period-claims.ts';
import { DEFAULT_WEBHOOK_SETTINGS } from '../../src/config/webhooks.ts';

type Exports = {
  exports: Array<{ exportId: string; destination: string; url: string; subject: string; period: string; enabled: boolean }>;
};
type Reports = {
  reports: Array<{ reportId: string; exportId: string; periodStart: number; status: string; subjects: number; requests: number }>;
  cursor?: string;
};

const MINUTE = 60_000;
const OPENMETER_TOKEN = 'om_cli_test_token_4f1c9d';
const STRIPE_TOKEN = 'sk_test_cli_token_8b2e7a';

for (const dialect of DIALECTS) {
  describe(`keyhold usage (${dialect})`, () => {
    let store: Store;
    let url: string;
    let close: () => Promise<void>;
    let ws: string;
    let other: string;
    let openmeter: string;
    let stripe: string;
    let foreign: string;
    let start: number;
    before(async () => {
      ({ store, url, close } = await freshStore(dialect));
      ws = (await createWorkspace(store.db, 'acme', OPERATOR)).workspaceId;
      other = (await createWorkspace(store.db, 'globex', OPERATOR)).workspaceId;
      const caller = operatorCaller(ws, OPERATOR, 'req_test');
      const vault = createVault([{ id: 'test', key: Buffer.alloc(32, 7) }]);
      const ctx = { db: store.db, vault, webhooks: DEFAULT_WEBHOOK_SETTINGS, publicUrl: 'https://keys.example.com' };
      ({ exportId: openmeter } = await createExport(ctx, caller, {
        destination: 'openmeter',
        url: 'https://93.184.216.34/api/v1/events',
        token: OPENMETER_TOKEN,
        period: 'minute',
      }));
      ({ exportId: stripe } = await createExport(ctx, caller, {
        destination: 'stripe',
        url: 'https://93.184.216.35/v1/billing/meter_events',
        token: STRIPE_TOKEN,
        subject: 'key',
        period: 'day',
        enabled: false,
      }));
      const otherCaller = operatorCaller(other, OPERATOR, 'req_test');
      ({ exportId: foreign } = await createExport(ctx, otherCaller, {
        destination: 'openmeter',
        url: 'https://93.184.216.34/api/v1/events',
        token: OPENMETER_TOKEN,
      }));
      // Two closed minutes of one identity's verifications: the scan writes a report for each.
      start = (await getExport(store.db, caller, { exportId: openmeter })).reportedUntil;
      for (const [i, count] of [3, 5].entries()) {
        await store.db
          .insertInto('analytics_key_verifications_per_minute_by_key')
          .values({
            time: start + i * MINUTE,
            workspace_id: ws,
            key_space_id: 'api_cli',
            identity_id: 'id_cli',
            external_id: 'customer_1',
            key_id: 'key_cli',
            outcome: 'VALID',
            count,
            spent_credits: 0,
            latency_sum: count,
          })
          .execute();
      }
      assert.equal(await reportDuePeriods(store.db, { settleMs: 0 }, start + 2 * MINUTE), 2);
    });
    after(() => close());
    const cli = <T = CliAnswer>(...argv: string[]) => runCli<T>({ DATABASE_URL: url }, argv);
    const noToken = (r: unknown) => {
      const text = JSON.stringify(r);
      assert.ok(!text.includes(OPENMETER_TOKEN) && !text.includes(STRIPE_TOKEN), 'a token was printed');
    };

    test('list: the exports of the workspace, never a token', async () => {
      const r = await cli<Exports>('usage', 'list', '--workspace', ws, '--json');
      assert.equal(r.code, 0, JSON.stringify(r));
      assert.deepEqual(
        r.json.exports.map((e) => [e.exportId, e.destination, e.url, e.subject, e.period, e.enabled]),
        [
          [openmeter, 'openmeter', 'https://93.184.216.34/api/v1/events', 'identity', 'minute', true],
          [stripe, 'stripe', 'https://93.184.216.35/v1/billing/meter_events', 'key', 'day', false],
        ],
      );
      noToken(r);
      const text = await cli('usage', 'list', '--workspace', ws);
      assert.equal(text.code, 0);
      assert.match(
        text.out.join('\n'),
        new RegExp(`^${openmeter}  enabled  openmeter  identity per minute  https://93.184.216.34/api/v1/events`, 'm'),
      );
      assert.match(text.out.join('\n'), new RegExp(`^${stripe}  disabled  stripe  key per day`, 'm'));
      noToken(text);
      const empty = await cli('usage', 'list', '--workspace', (await createWorkspace(store.db, 'initech', OPERATOR)).workspaceId);
      assert.deepEqual([empty.code, empty.out], [0, ['no usage exports']]);
    });

    test('list: an unknown workspace is exit 1, data/workspace-not-found', async () => {
      const r = await cli('usage', 'list', '--workspace', 'ws_nope', '--json');
      assert.equal(r.code, 1);
      assert.equal(r.json.error.kind, 'data/workspace-not-found');
      const missing = await cli('usage', 'list', '--json');
      assert.equal(missing.code, 2);
    });

    test('reports: newest first, by status, paged with --cursor, never a token', async () => {
      const r = await cli<Reports>('usage', 'reports', '--workspace', ws, '--export', openmeter, '--json');
      assert.equal(r.code, 0, JSON.stringify(r));
      assert.deepEqual(
        r.json.reports.map((p) => [p.exportId, p.periodStart, p.status, p.subjects, p.requests]),
        [
          [openmeter, start + MINUTE, 'pending', 1, 1],
          [openmeter, start, 'pending', 1, 1],
        ],
      );
      assert.equal(r.json.cursor, undefined);
      noToken(r);
      const first = await cli<Reports>('usage', 'reports', '--workspace', ws, '--export', openmeter, '--limit', '1', '--json');
      assert.deepEqual(
        first.json.reports.map((p) => p.periodStart),
        [start + MINUTE],
      );
      assert.ok(first.json.cursor);
      const next = await cli<Reports>(
        'usage',
        'reports',
        '--workspace',
        ws,
        '--export',
        openmeter,
        '--cursor',
        first.json.cursor,
        '--json',
      );
      assert.deepEqual(
        next.json.reports.map((p) => p.periodStart),
        [start],
      );
      const delivered = await cli<Reports>('usage', 'reports', '--workspace', ws, '--export', openmeter, '--status', 'delivered', '--json');
      assert.deepEqual([delivered.code, delivered.json.reports], [0, []]);
      const text = await cli('usage', 'reports', '--workspace', ws, '--export', openmeter, '--limit', '1');
      assert.equal(text.code, 0);
      assert.match(
        text.out.join('\n'),
        new RegExp(`^urep_\\S+  ${new Date(start + MINUTE).toISOString()}\\.\\.\\S+  pending  1 subject\\(s\\)`, 'm'),
      );
      assert.match(text.out.join('\n'), new RegExp(`^more: --cursor ${first.json.cursor}$`, 'm'));
      noToken(text);
      const none = await cli('usage', 'reports', '--workspace', ws, '--export', stripe);
      assert.deepEqual([none.code, none.out], [0, ['no reports']]);
    });

    test("reports: an unknown export, or another workspace's, is exit 1, data/usage-export-not-found", async () => {
      for (const exportId of ['uexp_nope', foreign]) {
        const r = await cli('usage', 'reports', '--workspace', ws, '--export', exportId, '--json');
        assert.equal(r.code, 1, JSON.stringify(r));
        assert.equal(r.json.error.kind, 'data/usage-export-not-found');
        assert.match(r.json.error.detail, new RegExp(exportId));
      }
      const text = await cli('usage', 'reports', '--workspace', ws, '--export', 'uexp_nope');
      assert.equal(text.code, 1);
      assert.match(text.err.join('\n'), /^keyhold: .*uexp_nope/);
      const ghost = await cli('usage', 'reports', '--workspace', 'ws_nope', '--export', openmeter, '--json');
      assert.deepEqual([ghost.code, ghost.json.error.kind], [1, 'data/workspace-not-found']);
    });

    test('reports: invalid options are usage errors (exit 2)', async () => {
      const base = ['usage', 'reports', '--workspace', ws, '--export', openmeter];
      assert.equal((await cli(...base, '--status', 'lost')).code, 2);
      assert.equal((await cli(...base, '--limit', '0')).code, 2);
      assert.equal((await cli(...base, '--limit', '101')).code, 2);
      assert.equal((await cli('usage', 'reports', '--workspace', ws)).code, 2);
    });
  });
}
