import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../helpers/harness.ts';
import { runCli } from '../helpers/cli.ts';
import { verificationHourRow } from '../helpers/rows.ts';
import type { AuditLogView } from '../../src/services/audit/list-audit-logs.ts';
import { auditLogsOldestFirst } from '../../src/services/audit/export-audit-logs.ts';
import { verificationsOldestFirst, type VerificationExportRow } from '../../src/services/analytics/export-verifications.ts';
import { HOUR_MS } from '../../src/services/verification/verification-recorder.ts';
import { refillRollupForms } from '../helpers/rollup-forms.ts';
import { prng } from '../helpers/prng.ts';

/** A fixed, hour-aligned origin for the hourly rows: 2025-03-01T00:00Z. */
const T0 = Date.UTC(2025, 2, 1);
const OUTCOMES = ['VALID', 'FORBIDDEN', 'USAGE_EXCEEDED', 'RATE_LIMITED', 'DISABLED', 'INSUFFICIENT_PERMISSIONS', 'EXPIRED'];

/** The records of every page, in order. */
const collect = async <T>(pages: AsyncIterable<T[]>): Promise<T[]> => {
  const all: T[] = [];
  for await (const page of pages) all.push(...page);
  return all;
};

for (const dialect of DIALECTS) {
  describe(`keyhold export (${dialect})`, () => {
    let w: World;
    before(async () => {
      w = await world(dialect);
    });
    after(() => w.close());
    const exportCli = (...argv: string[]) => runCli({ DATABASE_URL: w.url }, ['export', ...argv]);

    /** Every record audit.listLogs answers for this window, page by page (newest first), then oldest first. */
    async function listedOldestFirst(window: { since?: number; until?: number }): Promise<AuditLogView[]> {
      const all: AuditLogView[] = [];
      let cursor: string | undefined;
      do {
        const query: Record<string, string | number> = { limit: 100, ...window, ...(cursor ? { cursor } : {}) };
        const page = await w.get<{ logs: AuditLogView[]; cursor?: string }>('/v1/audit.listLogs', query);
        assert.equal(page.status, 200, page.body);
        all.push(...page.json.logs);
        cursor = page.json.cursor;
      } while (cursor);
      return all.reverse();
    }

    test('export audit: NDJSON, one record a line, oldest first, record for record as audit.listLogs; since/until bound it', async () => {
      const apiId = await w.createApi('export');
      for (let i = 0; i < 40; i++) {
        await w.createKey({ apiId, name: `k${i}`, meta: { i, text: 'line\nbreak "quoted"' } });
        if (i % 10 === 0) await new Promise((r) => setTimeout(r, 3)); // a few distinct times to bound by
      }
      const other = await w.otherWorkspace();
      await w.post('/v1/apis.createApi', { name: 'elsewhere' }, other.root);

      const all = await exportCli('audit', '--workspace', w.workspaceId);
      assert.equal(all.code, 0, all.err.join('\n'));
      const records = all.out.map((line) => JSON.parse(line) as AuditLogView);
      assert.ok(records.length > 40);
      assert.deepEqual(records, await listedOldestFirst({}));
      assert.deepEqual(
        records.map((r) => r.id),
        records.map((r) => r.id).sort(),
        'oldest first',
      );

      const times = [...new Set(records.map((r) => r.time))].sort((a, b) => a - b);
      assert.ok(times.length >= 3, 'records at several times');
      const since = times[1];
      const until = times[times.length - 1];
      for (const window of [{ since }, { until }, { since, until }]) {
        const argv = Object.entries(window).flatMap(([k, v]) => [`--${k}`, String(v)]);
        const bounded = await exportCli('audit', '--workspace', w.workspaceId, ...argv);
        assert.equal(bounded.code, 0, bounded.err.join('\n'));
        const got = bounded.out.map((line) => JSON.parse(line) as AuditLogView);
        assert.deepEqual(got, await listedOldestFirst(window), JSON.stringify(window));
        assert.ok(got.length > 0 && got.length < records.length);
        assert.ok(got.every((r) => r.time >= (window.since ?? 0) && r.time < (window.until ?? Infinity)));
      }

      // Page boundaries: any page size reads the same records.
      for (const pageRows of [1, 7, 1000]) {
        const read = await collect(auditLogsOldestFirst(w.store.db, w.workspaceId, {}, pageRows));
        assert.deepEqual(JSON.parse(JSON.stringify(read)), records, `pages of ${pageRows}`);
      }
    });

    test('export verifications: one line per key and hour, oldest first, as analytics.getVerifications grouped by hour and key', async () => {
      const apis = [await w.createApi('api-a'), await w.createApi('api-b')];
      const random = prng(20);
      const rows = [];
      const seen = new Set<string>();
      for (let n = 0; n < 400; n++) {
        const apiId = apis[n % 2];
        const keyId = `key_export${apiId.slice(-4)}${Math.floor(random() * 12)}`;
        const hour = T0 + Math.floor(random() * 48) * HOUR_MS;
        const outcome = OUTCOMES[Math.floor(random() * OUTCOMES.length)];
        if (seen.has(`${keyId}/${hour}/${outcome}`)) continue;
        seen.add(`${keyId}/${hour}/${outcome}`);
        rows.push({ key_id: keyId, hour, outcome, workspace_id: w.workspaceId, api_id: apiId, identity_id: null, count: 1 + n });
      }
      await w.store.db
        .insertInto('analytics_key_verifications_per_hour')
        .values(rows.map((r) => verificationHourRow(w.store.db, r)))
        .execute();
      const otherWs = await w.otherWorkspace();
      await w.store.db
        .insertInto('analytics_key_verifications_per_hour')
        .values(
          verificationHourRow(w.store.db, {
            key_id: 'key_elsewhere',
            hour: T0,
            outcome: 'VALID',
            workspace_id: otherWs.workspaceId,
            api_id: 'api_x',
            identity_id: null,
            count: 5,
          }),
        )
        .execute();
      // Written straight into the roll-up: its coarser forms filled as the batch writer would have.
      await refillRollupForms(w.store.db);

      /** analytics.getVerifications of both APIs, grouped by hour and key, in the export's order and shape. */
      const analytics = async (start: number, end: number): Promise<VerificationExportRow[]> => {
        const out: VerificationExportRow[] = [];
        for (const apiId of apis) {
          const qs = new URLSearchParams({ apiId, start: String(start), end: String(end) });
          qs.append('groupBy', 'hour');
          qs.append('groupBy', 'key');
          const res = await w.app.inject({
            method: 'GET',
            url: `/v1/analytics.getVerifications?${qs}`,
            headers: { authorization: `Bearer ${w.root}` },
          });
          assert.equal(res.statusCode, 200, res.body);
          for (const r of res.json<Array<VerificationExportRow>>()) out.push({ ...r, apiId });
        }
        return out.sort((a, b) => a.time - b.time || (a.keyId < b.keyId ? -1 : a.keyId > b.keyId ? 1 : 0));
      };
      const sameFields = (r: VerificationExportRow) => {
        const { time, apiId, keyId, ...counts } = r;
        return { time, apiId, keyId, ...counts };
      };

      const all = await exportCli('verifications', '--workspace', w.workspaceId);
      assert.equal(all.code, 0, all.err.join('\n'));
      const exported = all.out.map((line) => JSON.parse(line) as VerificationExportRow);
      const expected = await analytics(T0, T0 + 48 * HOUR_MS);
      assert.equal(exported.length, expected.length);
      assert.deepEqual(exported.map(sameFields), expected.map(sameFields));
      assert.deepEqual(
        exported.reduce((sum, r) => sum + r.total, 0),
        rows.reduce((sum, r) => sum + r.count, 0),
        'every count exported once',
      );

      // since/until cover the hours overlapping [since, until), as the analytics API's window does.
      const since = T0 + 5 * HOUR_MS + 1234;
      const until = T0 + 30 * HOUR_MS + 1;
      const bounded = await exportCli('verifications', '--workspace', w.workspaceId, '--since', String(since), '--until', String(until));
      assert.equal(bounded.code, 0, bounded.err.join('\n'));
      const got = bounded.out.map((line) => JSON.parse(line) as VerificationExportRow);
      assert.deepEqual(got.map(sameFields), (await analytics(since, until)).map(sameFields));
      assert.ok(got.length > 0 && got.length < exported.length);
      assert.ok(got.every((r) => r.time >= T0 + 5 * HOUR_MS && r.time <= T0 + 30 * HOUR_MS));

      // A page may end inside a key's outcomes: any page size gives the same rows.
      for (const pageRows of [8, 9, 25, 1000]) {
        assert.deepEqual(
          await collect(verificationsOldestFirst(w.store.db, w.workspaceId, {}, pageRows)),
          exported,
          `pages of ${pageRows}`,
        );
      }
    });

    test('bad options: exit 2 with one clear line, nothing on stdout', async () => {
      const cases: Array<[string[], RegExp]> = [
        [['audit'], /--workspace is required/],
        [['verifications', '--workspace', 'ws_nope'], /workspace ws_nope not found/],
        [['audit', '--workspace', w.workspaceId, '--since', 'yesterday'], /--since must be epoch milliseconds/],
        [['audit', '--workspace', w.workspaceId, '--until=-5'], /--until must be epoch milliseconds/],
        [['verifications', '--workspace', w.workspaceId, '--since', '10', '--until', '10'], /--since must be before --until/],
        [['audit', '--workspace', w.workspaceId, '--limit', '5'], /limit/],
      ];
      for (const [argv, message] of cases) {
        const r = await exportCli(...argv);
        assert.equal(r.code, 2, `${argv.join(' ')}: ${JSON.stringify(r)}`);
        assert.deepEqual(r.out, [], argv.join(' '));
        assert.match(r.err[0], message);
      }
    });
  });
}
