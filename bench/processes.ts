// What `npm run bench` (bench/run.ts) needs around the processes it starts: every child is tracked and killed
// on the way out (success, failure or signal), cleanups run once, and a few helpers (free port, CPU time of
// a process, settings from the environment).

import type { ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { randomInt } from 'node:crypto';

export const HOST = '127.0.0.1';

const children = new Set<ChildProcess>();
const cleanups: Array<() => Promise<void>> = [];

/** Registers a child so that killAll() kills it. */
export function track(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/** SIGKILLs every tracked child still running. */
export function killAll(): void {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}

/** Registers a cleanup (e.g. dropping a scratch schema); runCleanups() runs them, last first. */
export function addCleanup(fn: () => Promise<void>): void {
  cleanups.push(fn);
}

export async function runCleanups(): Promise<void> {
  while (cleanups.length) {
    const fn = cleanups.pop()!;
    await fn().catch((err: Error) => console.error(`cleanup failed: ${err.message}`));
  }
}

process.on('exit', killAll);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`\n${signal}: stopping`);
    killAll();
    const force = setTimeout(() => process.exit(130), 5_000);
    force.unref();
    void runCleanups().finally(() => process.exit(130));
  });
}

/** Runs a standalone bench script's `main`: a failure is printed and sets the exit code; what it started is always ended. */
export function runStandalone(main: () => Promise<void>): void {
  main()
    .catch((err: Error) => {
      console.error(err.stack ?? err.message);
      process.exitCode = 1;
    })
    .finally(async () => {
      killAll();
      await runCleanups();
    });
}

/** Resolves when the child exits (immediately if it already has). */
export function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((r) => child.once('exit', () => r()));
}

export async function stopChild(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited(child);
  clearTimeout(timer);
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, HOST, () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** User and system CPU seconds of a process so far (Linux /proc), or undefined where that is not available. */
export async function processCpuSeconds(pid: number | undefined): Promise<{ user: number; system: number } | undefined> {
  if (pid === undefined || process.platform !== 'linux') return undefined;
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15 (1-based), in clock ticks.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { user: Number(fields[11]) / CLOCK_TICKS, system: Number(fields[12]) / CLOCK_TICKS };
  } catch {
    return undefined;
  }
}
/** User + system CPU seconds of a process so far; NaN where they cannot be read. */
export async function processCpuTotalSeconds(pid: number | undefined): Promise<number> {
  const c = await processCpuSeconds(pid);
  return c ? c.user + c.system : Number.NaN;
}

/** USER_HZ: 100 on every mainstream Linux. */
const CLOCK_TICKS = 100;

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

const BASE58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
export const base58 = (n: number) => Array.from({ length: n }, () => BASE58[randomInt(BASE58.length)]).join('');

export function positiveInt(name: string, fallback: number): number {
  const n = nonNegativeInt(name, fallback);
  if (n === 0) throw new Error(`${name} must be > 0`);
  return n;
}

export function nonNegativeInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got "${raw}"`);
  return n;
}

/** Resident set size of a process (VmRSS of /proc/<pid>/status) in MiB, or undefined where that is not available. */
export async function residentMiB(pid: number | undefined): Promise<number | undefined> {
  if (pid === undefined || process.platform !== 'linux') return undefined;
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const kb = /^VmRSS:\s+(\d+) kB/m.exec(status)?.[1];
    return kb === undefined ? undefined : Number(kb) / 1024;
  } catch {
    return undefined;
  }
}
