// The cost of one usage report as the number of subjects in its period grows: `node bench/usage-report.ts`
// (BENCH_USAGE_SUBJECTS, default 100000; BENCH_USAGE_STORES, default sqlite,postgres). For each store: a workspace,
// an OpenMeter export by key of one minute, and that minute's `by_key` roll-up rows (one key each, VALID) inserted
// directly; then one scan claims the period (reads the usage, writes the report with its records), and the requests
// are made from the report as an attempt makes them (nothing is sent). Prints the time of each step, the report's
// size and the process's heap, so that the docs can say how big a period a server can report.

import { createVault } from '../src/crypto/vault.ts';
import { DEFAULT_WEBHOOK_SETTINGS } from '../src/config/webhooks.ts';
import { operatorCaller } from '../src/services/caller.ts';
import { createExport } from '../src/services/usage/exports.ts';
import { reportDuePeriods } from '../src/services/usage/period-claims.ts';
import { reportRequests } from '../src/services/usage/requests.ts';
import { createWorkspace } from '../src/services/workspaces/workspaces.ts';
import { openStore } from '../src/store/store.ts';
import { addCleanup, positiveInt, runStandalone } from './processes.ts';
import { scratchStore } from './scratch-store.ts';

const SUBJECTS = positiveInt('BENCH_USAGE_SUBJECTS', 100_000);
const STORES = (process.env.BENCH_USAGE_STORES ?? 'sqlite,postgres').split(',') as Array<'sqlite' | 'postgres'>;
const INSERT_CHUNK = 1000;
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

async function measure(dialect: 'sqlite' | 'postgres'): Promise<void> {
  const scratch = scratchStore(dialect);
  addCleanup(scratch.cleanup);
  const store = openStore(scratch.url);
  try {
    await store.migrate();
    const actor = { type: 'operator' as const, id: 'bench' };
    const { workspaceId } = await createWorkspace(store.db, 'bench-usage', actor);
    const caller = operatorCaller(workspaceId, actor, 'req_bench');
    const vault = createVault([{ id: 'bench', key: Buffer.alloc(32, 3) }]);
    const settings = { ...DEFAULT_WEBHOOK_SETTINGS, allowPrivate: true };
    const ctx = { db: store.db, vault, webhooks: settings, publicUrl: 'https://keyhold.example' };
    const { exportId } = await createExport(ctx, caller, {
      destination: 'openmeter',
      url: 'http://127.0.0.1:9/events',
      token: 'bench',
      subject: 'key',
      period: 'minute',
    });
    const period = Date.now() - (Date.now() % 60_000) - 60_000;
    await store.db
      .updateTable('usage_exports')
      .set({ next_period_start: period, next_period_end: period + 60_000 })
      .execute();
    for (let i = 0; i < SUBJECTS; i += INSERT_CHUNK) {
      const rows = Array.from({ length: Math.min(INSERT_CHUNK, SUBJECTS - i) }, (_, j) => ({
        ...{ workspace_id: workspaceId, time: period, key_space_id: 'api_bench', key_id: `key_${String(i + j).padStart(9, '0')}` },
        ...{ identity_id: '', external_id: '', outcome: 'VALID', count: 1 + ((i + j) % 7), spent_credits: 0, latency_sum: 1 },
      }));
      await store.db.insertInto('analytics_key_verifications_per_minute_by_key').values(rows).execute();
    }
    global.gc?.();
    const heapBefore = process.memoryUsage().heapUsed;
    let t = performance.now();
    const claimed = await reportDuePeriods(store.db, { settleMs: 0 }, period + 120_000);
    const claimMs = performance.now() - t;
    const heapAfter = process.memoryUsage().heapUsed;
    const report = await store.db.selectFrom('usage_reports').selectAll().where('export_id', '=', exportId).executeTakeFirstOrThrow();
    t = performance.now();
    const requests = reportRequests('openmeter', report);
    let bodyBytes = 0;
    for (let i = 0; i < requests.count; i++) bodyBytes += Buffer.byteLength(requests.request(i).body);
    const buildMs = performance.now() - t;
    console.log(
      `${dialect}: ${SUBJECTS.toLocaleString('en')} subjects, ${claimed} periods claimed (the second empty) in ${claimMs.toFixed(0)} ms ` +
        `(${((claimMs * 1000) / SUBJECTS).toFixed(1)} µs/subject); report ${mb(report.content.length)} ` +
        `(${(report.content.length / SUBJECTS).toFixed(0)} B/subject); ${requests.count} requests, ${mb(bodyBytes)}, ` +
        `made in ${buildMs.toFixed(0)} ms; heap during the claim +${mb(Math.max(0, heapAfter - heapBefore))}`,
    );
  } finally {
    await store.close();
  }
}

runStandalone(async () => {
  for (const dialect of STORES) await measure(dialect);
});
