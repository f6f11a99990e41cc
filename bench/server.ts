// The server `npm run bench` (bench/run.ts) measures, and the requests it sends: the real server (src/main.ts)
// in its own process, single requests to it (setup and checks), and load from the autocannon CLI in another
// process.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { request } from 'node:http';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { answeredByHeaders, ID_PLACEHOLDER, LANE_CONTENT_TYPE, type AnsweredBy } from './cases.ts';
import { base58, exited, freePort, HOST, sleep, track } from './processes.ts';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const OUT_DIR = join(ROOT, 'bench', 'out');
// The CLI's script, run with this same Node (node_modules/.bin/autocannon would run whichever `node` is first on PATH).
const AUTOCANNON = createRequire(import.meta.url).resolve('autocannon');

export interface Server {
  base: string;
  rootKey: string;
  child: ChildProcess;
  /** Recent output lines, for diagnostics. */
  output: string[];
  /** Log lines at warn or above (the server runs with LOG_LEVEL=warn). */
  warnings: number;
}

export interface ServerOptions {
  /** Where --cpu-prof writes the profiles (absent: no profiling). */
  cpuProfDir?: string;
  /** The server's REDIS_URL; empty (no Redis) when absent. */
  redisUrl?: string;
}

/** Starts src/main.ts on `databaseUrl` with a bootstrap root key, and waits until /v1/liveness answers. */
export async function startServer(databaseUrl: string, opts: ServerOptions): Promise<Server> {
  const port = await freePort();
  const rootKey = `kh_root_${base58(32)}`;
  const args = ['--disable-warning=ExperimentalWarning'];
  if (opts.cpuProfDir) {
    await mkdir(opts.cpuProfDir, { recursive: true });
    args.push('--cpu-prof', `--cpu-prof-dir=${opts.cpuProfDir}`);
  }
  args.push(join(ROOT, 'src', 'main.ts'));
  const env = {
    ...process.env,
    PORT: String(port),
    HOST,
    LOG_LEVEL: 'warn',
    DATABASE_URL: databaseUrl,
    KEYHOLD_BOOTSTRAP_ROOT_KEY: rootKey,
    REDIS_URL: opts.redisUrl ?? '', // only the sqlite+redis store runs with Redis
  };
  const child = track(spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] }));
  const server: Server = { base: `http://${HOST}:${port}`, rootKey, child, output: [], warnings: 0 };
  const collect = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (!line.trim()) continue;
      server.output.push(line);
      if (server.output.length > 50) server.output.shift();
      try {
        if ((JSON.parse(line) as { level?: number }).level! >= 40) server.warnings++;
      } catch {
        /* not a log line */
      }
    }
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  await waitUntilUp(server);
  server.warnings = 0; // first-start notices (bootstrap, generated files) are not about the load
  return server;
}

async function waitUntilUp(server: Server): Promise<void> {
  const { child } = server;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`the server exited (${child.exitCode ?? child.signalCode}) before it was up:\n${server.output.join('\n')}`);
    }
    try {
      const res = await fetch(`${server.base}/v1/liveness`, { signal: AbortSignal.timeout(1_000) });
      if (res.ok) return;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) throw new Error(`the server did not answer /v1/liveness within 30 s:\n${server.output.join('\n')}`);
    await sleep(100);
  }
}

export interface Load {
  method: 'GET' | 'POST';
  path: string;
  body?: string;
  contentType?: string;
  /** Sent as `Authorization: Bearer <rootKey>` (ratelimits.limit cases). */
  rootKey?: string;
  /** Every request replaces ID_PLACEHOLDER in the body with a new random id (autocannon --idReplacement). */
  idReplacement?: boolean;
}

function headersOf(load: Load): Record<string, string> {
  const headers: Record<string, string> = {};
  if (load.body !== undefined) headers['content-type'] = load.contentType ?? LANE_CONTENT_TYPE;
  if (load.rootKey) headers.authorization = `Bearer ${load.rootKey}`;
  return headers;
}

/** The body one request sends (with a fresh id where the load replaces one). */
const bodyOf = (load: Load): string | undefined => (load.idReplacement ? load.body?.replaceAll(ID_PLACEHOLDER, base58(16)) : load.body);

/** One request; the body parsed as JSON where it is JSON. */
export async function call(server: Server, load: Load): Promise<{ status: number; json: any }> {
  const res = await fetch(server.base + load.path, {
    method: load.method,
    headers: headersOf(load),
    body: bodyOf(load),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: res.status, json };
}

/** Sends the request once and tells which code answered it, from the response's header order (node:http keeps it). */
export function answeredBy(server: Server, load: Load): Promise<AnsweredBy | undefined> {
  return new Promise((resolve, reject) => {
    const body = bodyOf(load);
    const headers = body === undefined ? headersOf(load) : { ...headersOf(load), 'content-length': String(Buffer.byteLength(body)) };
    const req = request(server.base + load.path, { method: load.method, headers, timeout: 10_000 }, (res) => {
      res.resume();
      res.once('end', () => resolve(answeredByHeaders(res.rawHeaders)));
    });
    req.once('timeout', () => req.destroy(new Error('timed out')));
    req.once('error', reject);
    req.end(body);
  });
}

export interface AutocannonJson {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number; mean: number };
  non2xx: number;
  errors: number;
  timeouts: number;
}

/** Runs the autocannon CLI in its own process (same Node binary) and returns its JSON summary. */
export async function autocannon(
  server: Server,
  load: Load,
  seconds: number,
  opts: { connections: number; pipelining: number },
): Promise<AutocannonJson> {
  const args = [AUTOCANNON, '--json', '--no-progress', '--connections', String(opts.connections), '--pipelining'];
  args.push(String(opts.pipelining), '--duration', String(seconds), '--timeout', '10', '--method', load.method);
  for (const [name, value] of Object.entries(headersOf(load))) args.push('--headers', `${name}=${value}`);
  if (load.body !== undefined) args.push('--body', load.body);
  if (load.idReplacement) args.push('--idReplacement');
  args.push(server.base + load.path);
  const child = track(spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] }));
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => {
    stdout += c.toString('utf8');
  });
  child.stderr!.on('data', (c: Buffer) => {
    stderr += c.toString('utf8');
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), (seconds + 30) * 1000);
  await exited(child);
  clearTimeout(timer);
  if (child.exitCode !== 0) throw new Error(`autocannon exited with ${child.exitCode ?? child.signalCode}: ${stderr.trim()}`);
  const line = stdout.trim().split('\n').filter(Boolean).at(-1);
  if (!line) throw new Error(`autocannon printed no result: ${stderr.trim()}`);
  return JSON.parse(line) as AutocannonJson;
}
