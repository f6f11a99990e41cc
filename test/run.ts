// `npm test`: every test file (`test/**/*.test.ts`), by node's test runner, in three groups, each with its own bound
// on how many of its files run at once (a file runs in a process of its own); `other` and `browser` run at the same
// time, then `system` runs alone (its timings across server processes need the machine to themselves):
//
//   system   test/system/     real server processes, crashes and outages: several processes per file
//   browser  test/dashboard/  a chromium and a listening server per suite
//   other    everything else  in-process unit and integration files, mostly waiting on PostgreSQL, Redis, timers
//
// Most of the suite's time is waiting (spawned servers, timers, the network, a browser), so files overlap well
// even on 2 cores; the bounds keep the heavy groups from starving each other. Every file has its own databases
// (a SQLite file, a PostgreSQL schema), Redis keys and ports (docs/continuous-integration.md).
//
// The output is node's spec reporter for all groups (each file's tests together), then the ten slowest files
// (wall time, from their process' start to its end), node's summary, and a closing `N passed, N failed` line.
// It exits 1 when a test failed or was cancelled.
//
// Each test process, and each server process a test starts, keeps V8's compiled code of the modules it loads in
// node's compile cache (NODE_COMPILE_CACHE, unless already set: the system's temp dir), so the other processes
// load them without compiling again: a quarter less CPU per file.
//
// Arguments: test files to run instead of all of them (in the same groups).
// Settings (environment):
//   KEYHOLD_TEST_CONCURRENCY  files at once per group: `other=3,system=1,browser=1` (the default; any subset),
//                             or `1`: every file in one group, one file at a time (the suite as it ran before groups)

import { globSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { PassThrough } from 'node:stream';
import { finished } from 'node:stream/promises';
import { run } from 'node:test';
import { spec, type TestEvent } from 'node:test/reporters';

interface Group {
  name: string;
  files: string[];
  concurrency: number;
}

const DEFAULT_CONCURRENCY: Record<string, number> = { other: 3, system: 1, browser: 1 };
/** The group of a file: its directory's, else `other`. */
const GROUP_OF_DIRECTORY: Array<[string, string]> = [
  ['test/system/', 'system'],
  ['test/dashboard/', 'browser'],
];
/**
 * Files that take minutes (measured in CI: the fuzz suite 755 s, SQL analytics 267 s, backups 85 s) start first in
 * their group, so that the group's files end together instead of the longest starting last.
 */
const SLOW_FILES = ['test/fuzz/routes.test.ts', 'test/http/v2/analytics.test.ts', 'test/cli/backup.test.ts'];
const slowFirst = (a: string, b: string): number => {
  const [ia, ib] = [SLOW_FILES.indexOf(a), SLOW_FILES.indexOf(b)].map((i) => (i < 0 ? SLOW_FILES.length : i));
  return ia - ib || (a < b ? -1 : a > b ? 1 : 0);
};
/** A test's own limit (as `--test-timeout`; its hooks' too): a hung test fails instead of holding the run. */
const TEST_TIMEOUT_MS = 120_000;

/** The groups to run: all test files, or `argv`'s, with KEYHOLD_TEST_CONCURRENCY's bounds. */
export function groups(argv: string[], setting = process.env.KEYHOLD_TEST_CONCURRENCY ?? ''): Group[] {
  const bounds = { ...DEFAULT_CONCURRENCY };
  const serial = setting.trim() === '1';
  for (const part of serial ? [] : setting.split(',').filter((p) => p.trim())) {
    const [name, value] = part.split('=').map((s) => s.trim());
    if (!(name in bounds) || !/^[1-9][0-9]*$/.test(value ?? '')) {
      throw new Error(`KEYHOLD_TEST_CONCURRENCY must be 1 or like other=3,system=1,browser=1 (got ${JSON.stringify(setting)})`);
    }
    bounds[name] = Number(value);
  }
  const files = (argv.length ? argv : globSync('test/**/*.test.ts')).map((f) => relative('.', f)).sort(slowFirst);
  if (serial) return [{ name: 'all', files, concurrency: 1 }];
  const groupOf = (file: string) => GROUP_OF_DIRECTORY.find(([dir]) => file.startsWith(dir))?.[1] ?? 'other';
  return Object.keys(bounds)
    .map((name) => ({ name, files: files.filter((f) => groupOf(f) === name), concurrency: bounds[name] }))
    .filter((g) => g.files.length > 0);
}

type Counts = { tests: number; suites: number; passed: number; failed: number; cancelled: number; skipped: number; todo: number };

/** What the run has seen: the root summaries of the groups and each file's wall time. */
class Tally {
  readonly counts: Counts = { tests: 0, suites: 0, passed: 0, failed: 0, cancelled: 0, skipped: 0, todo: 0 };
  readonly files: Array<{ file: string; group: string; ms: number }> = [];
  readonly groups: Array<{ group: Group; ms: number }> = [];
  success = true;

  /** Takes in `event` if it is a group's own (a root summary, a file's end); returns whether to report it as is. */
  take(event: TestEvent, group: Group): boolean {
    const { type, data } = event;
    if (type === 'test:summary' && data.file === undefined) {
      // `failed` is in node's counts but missing from @types/node's.
      const counts = data.counts as typeof data.counts & { failed: number };
      for (const k of Object.keys(this.counts) as Array<keyof Counts>) this.counts[k] += counts[k];
      this.success &&= data.success;
      return false;
    }
    // A group's own plan and closing diagnostics (tests, pass, fail…): the run's are reported once, at the end.
    if ((type === 'test:plan' || type === 'test:diagnostic') && data.nesting === 0 && data.file === undefined) return false;
    if (type === 'test:complete' && isFileEnd(event)) {
      this.files.push({ file: data.name, group: group.name, ms: data.details.duration_ms });
    }
    return true;
  }

  /** The closing lines, as node's diagnostics: groups, the ten slowest files, then node's summary. */
  closing(durationMs: number): string[] {
    const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
    const slowest = [...this.files].sort((a, b) => b.ms - a.ms).slice(0, 10);
    const c = this.counts;
    return [
      ...this.groups.map(({ group, ms }) => `group ${group.name}: ${group.files.length} files, ${group.concurrency} at a time, ${s(ms)}`),
      'slowest test files (wall time):',
      ...slowest.map((f) => `  ${s(f.ms).padStart(8)}  ${f.file} (${f.group})`),
      `tests ${c.tests}`,
      `suites ${c.suites}`,
      `pass ${c.passed}`,
      `fail ${c.failed}`,
      `cancelled ${c.cancelled}`,
      `skipped ${c.skipped}`,
      `todo ${c.todo}`,
      `duration_ms ${durationMs}`,
    ];
  }
}

/**
 * The events of each file held until the file has ended, then handed on together: node's runner reports the files
 * of one run in order, but the groups' runs would interleave theirs.
 *
 * A file has ended at its own summary (`test:summary` naming the file), which follows all of its events. Its
 * process' `test:complete` does not: it can come before the events parsed from the process' output, which were then
 * held for ever and never reported (a failing test among them was counted in the summary but named nowhere).
 */
class FileByFile {
  readonly #held = new Map<string, TestEvent[]>();

  /** The events to report now: none while `event`'s file runs, all of the file's once it has ended. */
  take(event: TestEvent): TestEvent[] {
    const file = event.data && 'file' in event.data ? event.data.file : undefined;
    if (!file) return [event];
    const held = this.#held.get(file) ?? [];
    held.push(event);
    if (event.type !== 'test:summary') {
      this.#held.set(file, held);
      return [];
    }
    this.#held.delete(file);
    return held;
  }

  /** Whatever is still held at the end of the run (a file without a summary): reported rather than lost. */
  rest(): TestEvent[] {
    const rest = [...this.#held.values()].flat();
    this.#held.clear();
    return rest;
  }
}

/** Whether `event` is the end of a test file's process (its wall time), rather than of one of its tests. */
function isFileEnd({ type, data }: TestEvent): boolean {
  return type === 'test:complete' && data.nesting === 0 && data.file !== undefined && resolve(data.name) === data.file;
}

/** Runs `other` and `browser` at once, then `system` alone; their events go, each file's together, to node's spec reporter on stdout. */
async function main(): Promise<void> {
  const started = performance.now();
  const all = groups(process.argv.slice(2));
  if (all.every((g) => g.files.length === 0)) throw new Error('no test files');
  const tally = new Tally();
  const together = new FileByFile();
  process.env.NODE_COMPILE_CACHE ??= join(tmpdir(), 'node-compile-cache');
  const events = new PassThrough({ objectMode: true });
  const reported = events.compose(spec());
  reported.pipe(process.stdout, { end: false });
  const runGroup = async (group: Group) => {
    const groupStarted = performance.now();
    // Not node's forceExit: it ends a file's process once the tests registered so far have ended, which drops
    // those registered later (after a top-level await, or by code still running): a CI run with it reported 23 fewer tests.
    for await (const event of run({ files: group.files, concurrency: group.concurrency, timeout: TEST_TIMEOUT_MS })) {
      if (tally.take(event as TestEvent, group)) for (const e of together.take(event as TestEvent)) events.write(e);
    }
    tally.groups.push({ group, ms: performance.now() - groupStarted });
  };
  // The system group runs alone, after the others: its files time real server processes across nodes (a change
  // seen everywhere within 1 s, exact credits under 2,000 concurrent requests), which two busy cores shared with
  // other files would turn into failures of the machine rather than of the code.
  await Promise.all(all.filter((g) => g.name !== 'system').map(runGroup));
  for (const group of all.filter((g) => g.name === 'system')) await runGroup(group);
  for (const e of together.rest()) events.write(e);
  for (const message of tally.closing(performance.now() - started)) {
    events.write({ type: 'test:diagnostic', data: { nesting: 0, message, file: undefined, line: undefined, column: undefined } });
  }
  events.end();
  await finished(reported);
  const { passed, failed, cancelled } = tally.counts;
  process.stdout.write(`${passed} passed, ${failed + cancelled} failed\n`);
  process.exitCode = tally.success && failed + cancelled === 0 ? 0 : 1;
}

if (import.meta.main) await main();
