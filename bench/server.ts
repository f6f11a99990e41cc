// The servers `npm run bench` (bench/run.ts) measures, and the requests it sends: the real server (src/main.ts)
// and the limit (bench/limit-server.ts), each in its own process; single requests (setup and checks); load
// from autocannon in the load worker (bench/load-worker.ts) and from bench/list-load.ts, each in its own process.

import { fork, spawn, type ChildProcess } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { request } from 'node:http';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { answeredByHeaders, ID_PLACEHOLDER, LANE_CONTENT_TYPE, type AnsweredBy } from './cases.ts';
import { SERVER_ENV, SERVER_NODE_FLAGS } from './node-flags.ts';
import { base58, exited, freePort, HOST, sleep, track } from './processes.ts';
import type { ListLoadResult, Spec } from './list-load.ts';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const OUT_DIR = join(ROOT, 'bench', 'out');

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
  /** The bootstrap root key (a new one when absent); a restart on the same store passes the first start's. */
  rootKey?: string;
  /** More environment for the server (e.g. KEYHOLD_KEY_CACHE_SIZE). */
  env?: Record<string, string>;
  /** More Node flags for the server (experiments: --trace-gc, --heapsnapshot-signal=SIGUSR2). */
  nodeFlags?: string[];
  /** Another source tree to start src/main.ts from (a checkout of an earlier commit, to compare); default this one. */
  root?: string;
}

/** How src/main.ts is started on `databaseUrl`: Node's arguments and the environment. */
export function serverCommand(
  databaseUrl: string,
  port: number,
  rootKey: string,
  opts: ServerOptions,
): { args: string[]; env: NodeJS.ProcessEnv } {
  // As `npm start` runs it (package.json): the same Node and V8 flags.
  const args = [...SERVER_NODE_FLAGS];
  if (opts.cpuProfDir) args.push('--cpu-prof', `--cpu-prof-dir=${opts.cpuProfDir}`);
  if (opts.nodeFlags) args.push(...opts.nodeFlags);
  args.push(join(opts.root ?? ROOT, 'src', 'main.ts'));
  const env = {
    ...process.env,
    ...SERVER_ENV,
    PORT: String(port),
    HOST,
    LOG_LEVEL: 'warn',
    DATABASE_URL: databaseUrl,
    KEYHOLD_BOOTSTRAP_ROOT_KEY: rootKey,
    REDIS_URL: opts.redisUrl ?? '', // only the sqlite+redis store runs with Redis
    ...opts.env,
  };
  return { args, env };
}

/** Starts src/main.ts on `databaseUrl` with a bootstrap root key, and waits until /v1/liveness answers. */
export async function startServer(databaseUrl: string, opts: ServerOptions): Promise<Server> {
  const port = await freePort();
  const rootKey = opts.rootKey ?? `kh_root_${base58(32)}`;
  if (opts.cpuProfDir) await mkdir(opts.cpuProfDir, { recursive: true });
  const { args, env } = serverCommand(databaseUrl, port, rootKey, opts);
  const child = track(spawn(process.execPath, args, { cwd: opts.root ?? ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] }));
  const server: Server = { base: `http://${HOST}:${port}`, rootKey, child, output: [], warnings: 0 };
  collectOutput(server);
  await waitUntilUp(server, '/v1/liveness');
  server.warnings = 0; // first-start notices (bootstrap, generated files) are not about the load
  return server;
}

/** Starts the limit (bench/limit-server.ts) knowing the keys in `keysFile`, and waits until it answers. */
export async function startLimitServer(keysFile: string): Promise<Server> {
  const port = await freePort();
  const env = { ...process.env, ...SERVER_ENV, PORT: String(port), HOST, BENCH_LIMIT_KEYS_FILE: keysFile };
  const child = track(
    spawn(process.execPath, [join(ROOT, 'bench', 'limit-server.ts')], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] }),
  );
  const server: Server = { base: `http://${HOST}:${port}`, rootKey: '', child, output: [], warnings: 0 };
  collectOutput(server);
  await waitUntilUp(server, '/');
  return server;
}

/** Keeps the last output lines of the process and counts its log lines at warn or above. */
function collectOutput(server: Server): void {
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
  server.child.stdout!.on('data', collect);
  server.child.stderr!.on('data', collect);
}

async function waitUntilUp(server: Server, path: string): Promise<void> {
  const { child } = server;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(
        `the server (${path === '/' ? 'limit' : 'keyhold'}) exited (${child.exitCode ?? child.signalCode}) before it was up:\n${server.output.join('\n')}`,
      );
    }
    try {
      const res = await fetch(server.base + path, { signal: AbortSignal.timeout(1_000) });
      if (res.ok) return;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) throw new Error(`the server did not answer ${path} within 30 s:\n${server.output.join('\n')}`);
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
  /** `average`: per second (per 100 ms sample with `amount`, see autocannon()). */
  requests: { average: number; total: number };
  latency: { p50: number; p99: number; p99_9: number; max: number; mean: number };
  non2xx: number;
  /** Responses with a 2xx status. */
  ok2xx: number;
  /** Wall time of the run, s (with `amount`: until the last response, to within the 100 ms sampling). */
  durationSeconds: number;
  errors: number;
  timeouts: number;
}

let loadWorker: ChildProcess | undefined;
let loadWorkerErrors = '';

/** The load worker (bench/load-worker.ts), started on first use. */
function worker(): ChildProcess {
  if (loadWorker && loadWorker.exitCode === null && loadWorker.signalCode === null) return loadWorker;
  loadWorkerErrors = '';
  const child = track(
    fork(join(ROOT, 'bench', 'load-worker.ts'), [], { cwd: ROOT, execPath: process.execPath, stdio: ['ignore', 'ignore', 'pipe', 'ipc'] }),
  );
  child.stderr!.on('data', (c: Buffer) => {
    loadWorkerErrors = (loadWorkerErrors + c.toString('utf8')).slice(-2000);
  });
  loadWorker = child;
  return child;
}

/**
 * Runs autocannon in the load worker (its own process, same Node binary) and returns its summary: `seconds` of
 * load, or with `opts.amount` exactly that many requests (each connection sends its share and waits for every
 * answer; `seconds` is then only the expected duration, for the timeout).
 */
export function autocannon(
  server: Server,
  load: Load,
  seconds: number,
  opts: { connections: number; pipelining: number; amount?: number },
): Promise<AutocannonJson> {
  const child = worker();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), (seconds + 30) * 1000);
    const onExit = () => {
      clearTimeout(timer);
      reject(new Error(`the load worker exited (${child.exitCode ?? child.signalCode}): ${loadWorkerErrors.trim()}`));
    };
    child.once('exit', onExit);
    child.once('message', (msg: { result?: AutocannonJson; error?: string }) => {
      clearTimeout(timer);
      child.off('exit', onExit);
      if (msg.error) reject(new Error(`autocannon: ${msg.error}`));
      else resolve(msg.result!);
    });
    child.send({
      url: server.base + load.path,
      method: load.method,
      headers: headersOf(load),
      body: load.body,
      idReplacement: load.idReplacement ?? false,
      connections: opts.connections,
      pipelining: opts.pipelining,
      duration: seconds,
      // With an amount, autocannon ends at the first sample after the last answer: sample often.
      ...(opts.amount ? { amount: opts.amount, sampleInt: 100 } : {}),
      timeout: 10,
    });
  });
}

/** Runs bench/list-load.ts (autocannon over a list of keys) in its own process and returns its result. */
export const listLoad = (spec: Spec, timeoutSeconds: number): Promise<ListLoadResult> =>
  runJsonChild<ListLoadResult>('list-load.ts', JSON.stringify(spec), timeoutSeconds);

/** Runs bench/<script> with one argument in its own process (killed after `timeoutSeconds`); its last stdout line, as JSON. */
export async function runJsonChild<T>(script: string, arg: string, timeoutSeconds: number): Promise<T> {
  const child = track(spawn(process.execPath, [join(ROOT, 'bench', script), arg], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] }));
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => {
    stdout += c.toString('utf8');
  });
  child.stderr!.on('data', (c: Buffer) => {
    stderr += c.toString('utf8');
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutSeconds * 1000);
  await exited(child);
  clearTimeout(timer);
  if (child.exitCode !== 0) throw new Error(`bench/${script} exited with ${child.exitCode ?? child.signalCode}: ${stderr.trim()}`);
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as T;
}
