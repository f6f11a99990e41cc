// Memory of `keyhold export audit` over a large audit log (not run by `npm run bench`).
//
//   node --disable-warning=ExperimentalWarning bench/export-audit.ts [--records 1000000] [--dialect sqlite|postgres]
//
// It writes `--records` audit records of one workspace straight into a fresh store (recordAudit, 5,000 a
// transaction: what a year of changes leaves, without a year of requests), then runs
// `keyhold export audit --workspace W` as its own process with stdout piped here, where the lines are counted
// and a sample of them parsed. Meanwhile it samples the exporter's VmRSS from /proc every 50 ms. It prints the
// records exported, the time, the RSS when the first line arrived, the peak RSS, their difference (the
// growth; the requirement is ≤ 50 MB for 1,000,000 records) and the bytes written. Exit 1 when the count is
// wrong or a sampled line does not parse.

import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { recordAudit, type AuditEntry } from '../src/services/audit/record-audit.ts';
import { createWorkspace } from '../src/services/workspaces/workspaces.ts';
import { openStore } from '../src/store/store.ts';
import { addCleanup, runStandalone, track } from './processes.ts';
import { scratchStore } from './scratch-store.ts';
import { ROOT } from './server.ts';

const { values: args } = parseArgs({
  options: { records: { type: 'string', default: '1000000' }, dialect: { type: 'string', default: 'sqlite' } },
});
const RECORDS = Number(args.records);
const dialect = args.dialect === 'postgres' ? 'postgres' : 'sqlite';
const BATCH = 5_000;
const mb = (kb: number) => `${(kb / 1024).toFixed(1)} MB`;

function rssKb(pid: number): number | undefined {
  try {
    return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
  } catch {
    return undefined;
  }
}

/** Writes the records: key changes with a diff of a realistic size, one millisecond apart, ending now. */
async function fill(url: string): Promise<string> {
  const store = openStore(url);
  try {
    await store.migrate();
    const actor = { type: 'operator' as const, id: 'bench' };
    const { workspaceId } = await createWorkspace(store.db, 'bench-export', actor);
    const started = performance.now();
    const end = Date.now();
    for (let done = 0; done < RECORDS; done += BATCH) {
      const entries: AuditEntry[] = Array.from({ length: Math.min(BATCH, RECORDS - done) }, (_, i) => ({
        workspaceId,
        event: 'key.update',
        actor: { type: 'root_key', id: 'rk_1ChTUwA7UxMGDnyPAJ2Pjw' },
        target: { type: 'key', id: `key_${String(done + i).padStart(18, '0')}` },
        requestId: `req_${String(done + i).padStart(18, '0')}`,
        diff: { name: { from: `key ${done + i}`, to: `renamed ${done + i}` }, meta: { plan: 'pro', seats: (done + i) % 50 } },
      }));
      await store.db.transaction().execute((tx) => recordAudit(tx, entries, end - RECORDS + done));
      if ((done + BATCH) % 200_000 === 0)
        console.log(`  wrote ${(done + BATCH).toLocaleString('en')} records in ${((performance.now() - started) / 1000).toFixed(0)} s`);
    }
    return workspaceId;
  } finally {
    await store.close();
  }
}

async function main(): Promise<void> {
  const scratch = scratchStore(dialect);
  addCleanup(scratch.cleanup);
  console.log(`export audit: ${RECORDS.toLocaleString('en')} records on ${dialect}; load ${loadavg()[0].toFixed(2)}`);
  const workspaceId = await fill(scratch.url);

  const started = performance.now();
  const child = track(
    spawn(process.execPath, [join(ROOT, 'bin', 'keyhold.js'), 'export', 'audit', '--workspace', workspaceId], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: scratch.url },
      stdio: ['ignore', 'pipe', 'inherit'],
    }),
  );
  const samples: number[] = [];
  const sampler = setInterval(() => {
    const kb = rssKb(child.pid!);
    if (kb) samples.push(kb);
  }, 50);
  let atFirstLine: number | undefined;
  let lines = 0;
  let bytes = 0;
  let badLines = 0;
  let partial = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    atFirstLine ??= rssKb(child.pid!);
    bytes += chunk.length;
    const text = partial + chunk.toString('utf8');
    const parts = text.split('\n');
    partial = parts.pop()!;
    for (const line of parts) {
      // Parse one line in 100 (and the first): enough to catch a broken stream, cheap enough not to slow it.
      if (lines++ % 100 === 0) {
        try {
          if (typeof JSON.parse(line).id !== 'string') badLines++;
        } catch {
          badLines++;
        }
      }
    }
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  clearInterval(sampler);
  const seconds = (performance.now() - started) / 1000;
  const peak = Math.max(...samples);
  const base = atFirstLine ?? samples[0];
  console.log(
    [
      'result:',
      `  exported            ${lines.toLocaleString('en')} records (exit ${code}), ${mb(bytes / 1024)} of NDJSON in ${seconds.toFixed(1)} s (${Math.round(lines / seconds).toLocaleString('en')} records/s)`,
      `  exporter RSS        ${mb(base)} at the first line, peak ${mb(peak)} (${samples.length} samples every 50 ms) → growth ${mb(peak - base)} (target ≤ 50 MB)`,
      `  sampled lines       ${Math.ceil(lines / 100)} parsed, ${badLines} bad`,
      `  load average        ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    ].join('\n'),
  );
  if (code !== 0 || lines !== RECORDS + 1 || badLines > 0) process.exitCode = 1; // + the workspace.create record
}

runStandalone(main);
