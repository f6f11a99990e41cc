// The cold-start cases of `npm run bench` (bench/many-keys.ts): the time from spawning the server to its first
// 200 answer to POST /v1/keys.verifyKey, polled every POLL_MS (a refused connection or any other answer counts
// as not yet), on the SQLite file with the many keys (verifying one of them: a cache miss), on an empty
// database (a fresh file each start: schema, bootstrap), and, as the floor, a trivial Fastify server
// (bench/fastify-floor.ts) with the same Node. Each is started `starts` times, one at a time; the median counts.

import { spawn, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { join } from 'node:path';
import { VERIFY_PATH } from './cases.ts';
import { freePort, HOST, sleep, stopChild, track } from './processes.ts';
import { fmt } from './report.ts';
import { scratchStore } from './scratch-store.ts';
import { ROOT, serverCommand } from './server.ts';
import type { Row } from './table.ts';

const POLL_MS = 5;
/** A start that has not answered by then is a broken setup, not a slow start. */
const START_TIMEOUT_MS = 60_000;
const TARGET_SECONDS = 1;

/** The status and body of one verification request, or undefined when it got no answer (not listening yet). */
function verifyAnswer(port: number, body: string): Promise<{ status: number | undefined; text: string } | undefined> {
  return new Promise((resolve) => {
    const headers = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
    const req = request({ host: HOST, port, path: VERIFY_PATH, method: 'POST', headers, agent: false, timeout: 5_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
      });
      res.once('end', () => resolve({ status: res.statusCode, text }));
      res.once('error', () => resolve(undefined));
    });
    req.once('timeout', () => req.destroy());
    req.once('error', () => resolve(undefined));
    req.end(body);
  });
}

/**
 * Spawns `args` with PORT=port, polls until a verification answers 200 (with `expect` in its body, when given, e.g.
 * `"code":"VALID"`), stops the process; seconds from spawn to that answer.
 */
export async function timeStart(args: string[], env: NodeJS.ProcessEnv, port: number, body: string, expect?: string): Promise<number> {
  const output: string[] = [];
  const started = performance.now();
  const child: ChildProcess = track(spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'pipe'] }));
  child.stderr!.on('data', (c: Buffer) => output.push(c.toString('utf8')));
  try {
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null)
        throw new Error(
          `cold start: the process exited (${child.exitCode ?? child.signalCode}) before answering:\n${output.join('').slice(-2000)}`,
        );
      const answer = await verifyAnswer(port, body);
      if (answer?.status === 200 && (expect === undefined || answer.text.includes(expect))) return (performance.now() - started) / 1000;
      if (performance.now() - started > START_TIMEOUT_MS) throw new Error(`cold start: no 200 from ${VERIFY_PATH} within 60 s`);
      await sleep(POLL_MS);
    }
  } finally {
    await stopChild(child);
  }
}

export const median = (xs: number[]): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

async function startsOf(label: string, starts: number, once: (i: number) => Promise<number>): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < starts; i++) times.push(await once(i));
  console.log(`   ${label.padEnd(44)} ${times.map((t) => `${fmt(t, 2)} s`).join(', ')} (median ${fmt(median(times), 2)} s)`);
  return times;
}

async function keyholdStart(databaseUrl: string, rootKey: string, body: string): Promise<number> {
  const port = await freePort();
  const { args, env } = serverCommand(databaseUrl, port, rootKey, {});
  return timeStart(args, env, port, body);
}

export interface ColdStartInput {
  /** The SQLite file with the keys (no server running on it). */
  databaseUrl: string;
  rootKey: string;
  apiId: string;
  keys: string[];
  starts: number;
}

/** The cold-start rows: with the keys, on an empty database, and the trivial Fastify floor. */
export async function coldStarts(input: ColdStartInput): Promise<Row[]> {
  const { apiId, keys, starts, rootKey } = input;
  const n = fmt(keys.length, 0);
  console.log(`\n== cold start: spawn → first 200 from ${VERIFY_PATH} (polled every ${POLL_MS} ms), ${starts} starts each`);
  const loaded = await startsOf(`${n} keys`, starts, (i) =>
    keyholdStart(input.databaseUrl, rootKey, JSON.stringify({ apiId, key: keys[(i * 7919) % keys.length] })),
  );
  const empty = await startsOf('empty database', starts, async () => {
    const store = scratchStore('sqlite');
    try {
      return await keyholdStart(store.url, rootKey, JSON.stringify({ key: keys[0] }));
    } finally {
      await store.cleanup();
    }
  });
  const floor = await startsOf('trivial Fastify server (floor)', starts, async () => {
    const port = await freePort();
    const env = { ...process.env, PORT: String(port), HOST };
    return timeStart([join(ROOT, 'bench', 'fastify-floor.ts')], env, port, JSON.stringify({ key: keys[0] }));
  });
  const row = (label: string, times: number[], target?: number): Row => ({
    case: `cold start, ${label}: ${fmt(median(times), 2)} s (median of ${starts})`,
    store: label.startsWith('trivial') ? '-' : 'sqlite',
    target: target === undefined ? undefined : `≤ ${fmt(target, 1)} s`,
    met: target === undefined ? undefined : median(times) <= target,
  });
  return [row(`${n} keys`, loaded, TARGET_SECONDS), row('empty database', empty), row('trivial Fastify server (floor)', floor)];
}
