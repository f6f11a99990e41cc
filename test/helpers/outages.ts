import { createServer, connect, type Server, type Socket } from 'node:net';
import { spawn, type ChildProcess } from 'node:child_process';
import { Writable } from 'node:stream';
import { performance } from 'node:perf_hooks';
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';
import pino from 'pino';
import { sleep } from './timing.ts';
import { freshStore, OPERATOR } from './harness.ts';
import type { Answer } from './json.ts';
import { buildApp, type AppOptions } from '../../src/app.ts';
import type { App } from '../../src/http/types.ts';
import { openStore, type Store } from '../../src/store/store.ts';
import { createWorkspace } from '../../src/services/workspaces/workspaces.ts';
import { insertRootKey } from '../../src/services/workspaces/root-keys.ts';
import { freePort, reapOnExit } from './processes.ts';

/**
 * Dependencies that go away on demand, for the tests of how Keyhold lives through outages. Each test takes
 * away only what it started itself (a proxy, a redis-server, its own PostgreSQL sessions), never the shared
 * PostgreSQL or Redis.
 */

/**
 * A TCP proxy on 127.0.0.1 in front of `host:port` that a test cuts and restores:
 * - `cut()`: every open connection is reset, and new ones are accepted but never answered (a network that went
 *   dark: connecting times out rather than being refused);
 * - `freeze()`: open connections stay open but nothing passes any more (a server that stopped answering);
 * - `restore()`: what is held or frozen is reset, and new connections are forwarded again;
 * - `slow(ms)`: new connections are forwarded only after `ms` (a server too busy to accept promptly).
 */
export class TcpProxy {
  readonly port: number;
  readonly #server: Server;
  readonly #open = new Set<{ client: Socket; upstream: Socket }>();
  readonly #held = new Set<Socket>();
  #mode: 'forward' | 'dark' = 'forward';
  #acceptAfterMs = 0;

  private constructor(server: Server, port: number) {
    this.#server = server;
    this.port = port;
  }

  static async start(host: string, port: number): Promise<TcpProxy> {
    let proxy: TcpProxy | undefined;
    const server = createServer((client) => proxy!.#accept(client, host, port));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
    proxy = new TcpProxy(server, (server.address() as { port: number }).port);
    return proxy;
  }

  #accept(client: Socket, host: string, port: number): void {
    client.on('error', () => {});
    if (this.#mode === 'dark') {
      this.#held.add(client);
      client.on('close', () => this.#held.delete(client));
      return;
    }
    if (this.#acceptAfterMs > 0) {
      // Held meanwhile: cut(), restore() and close() treat it as any held connection.
      this.#held.add(client);
      const timer = setTimeout(() => {
        this.#held.delete(client);
        this.#forward(client, host, port);
      }, this.#acceptAfterMs);
      client.on('close', () => {
        clearTimeout(timer);
        this.#held.delete(client);
      });
      return;
    }
    this.#forward(client, host, port);
  }

  #forward(client: Socket, host: string, port: number): void {
    const upstream = connect(port, host);
    upstream.on('error', () => client.destroy());
    const pair = { client, upstream };
    this.#open.add(pair);
    const drop = () => {
      this.#open.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('close', drop);
    upstream.on('close', drop);
    client.pipe(upstream);
    upstream.pipe(client);
  }

  cut(): void {
    this.#mode = 'dark';
    for (const { client, upstream } of this.#open) {
      client.resetAndDestroy();
      upstream.destroy();
    }
  }

  slow(ms: number): void {
    this.#acceptAfterMs = ms;
  }

  freeze(): void {
    for (const { client, upstream } of this.#open) {
      client.unpipe(upstream);
      upstream.unpipe(client);
      client.pause();
      upstream.pause();
    }
  }

  restore(): void {
    this.#mode = 'forward';
    for (const s of this.#held) s.resetAndDestroy();
    for (const { client, upstream } of this.#open) {
      if (!client.isPaused()) continue;
      client.resetAndDestroy();
      upstream.destroy();
    }
  }

  async close(): Promise<void> {
    this.cut();
    for (const s of this.#held) s.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

/** `url` (postgres://…) reaching its server through `port` on 127.0.0.1, with `params` added to its query. */
export function viaPort(url: string, port: number, params: Record<string, string> = {}): string {
  const parsed = new URL(url);
  parsed.hostname = '127.0.0.1';
  parsed.port = String(port);
  for (const [k, v] of Object.entries(params)) parsed.searchParams.set(k, v);
  return parsed.toString();
}

/** Ends every PostgreSQL session named `applicationName` (as an administrator would); returns how many. */
export async function terminateBackends(adminUrl: string, applicationName: string): Promise<number> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rows } = await client.query(
      'select pg_terminate_backend(pid) as ended from pg_stat_activity where application_name = $1 and pid <> pg_backend_pid()',
      [applicationName],
    );
    return rows.filter((r) => r.ended).length;
  } finally {
    await client.end();
  }
}

/** A redis-server of the test's own, on a spare port, without persistence: `stop()` kills it, `start()` brings it back on the same port. */
export class OwnRedis {
  readonly port: number;
  #proc?: ChildProcess;

  private constructor(port: number) {
    this.port = port;
  }

  static async start(): Promise<OwnRedis> {
    const redis = new OwnRedis(await freePort());
    await redis.start();
    return redis;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Starts it and waits (at most 10 s) until it accepts connections. */
  async start(): Promise<void> {
    const args = ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no'];
    const proc = spawn('redis-server', args, { stdio: 'ignore' });
    reapOnExit(proc);
    this.#proc = proc;
    for (const deadline = Date.now() + 10_000; Date.now() < deadline; await sleep(20)) {
      if (proc.exitCode !== null) throw new Error(`redis-server on port ${this.port} exited with ${proc.exitCode}`);
      if (await accepts(this.port)) return;
    }
    throw new Error(`redis-server on port ${this.port} did not start within 10 s`);
  }

  /** Kills it (SIGKILL: a crash) and waits until it is gone. */
  async stop(): Promise<void> {
    const proc = this.#proc;
    this.#proc = undefined;
    if (!proc || proc.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    proc.kill('SIGKILL');
    await exited;
  }
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** A pino logger at level info whose lines are kept, parsed, for tests that count what an outage logs. */
export function capturedLog(): { logger: pino.Logger; entries: Array<{ level: number; msg: string }> } {
  const entries: Array<{ level: number; msg: string }> = [];
  const logger = pino(
    { level: 'info' },
    new Writable({
      write(chunk, _enc, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) entries.push(JSON.parse(line));
        done();
      },
    }),
  );
  return { logger, entries };
}

/** Calls `probe` every 50 ms until it returns true; fails after `timeoutMs`. */
export async function eventually(what: string, probe: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await sleep(50)) {
    if (await probe()) return;
  }
  throw new Error(`${what}: not within ${timeoutMs} ms`);
}

/** One answer under load: its status, the verification code when there is one, and how long it took. */
export interface Timed {
  status: number;
  code?: string;
  ms: number;
}

/**
 * Runs `call` from `loops` concurrent loops while `during` runs, then stops them and returns every answer.
 * A call that throws counts as status -1. Each loop makes at most 5000 calls.
 */
export async function underLoad(
  loops: number,
  call: (loop: number) => Promise<{ status: number; code?: string }>,
  during: () => Promise<void>,
): Promise<Timed[]> {
  const answers: Timed[] = [];
  let stopped = false;
  const loop = async (i: number) => {
    for (let n = 0; !stopped && n < 5000; n++) {
      const started = performance.now();
      const answer = await call(i).catch(() => ({ status: -1, code: undefined }));
      answers.push({ ...answer, ms: performance.now() - started });
    }
  };
  const running = Array.from({ length: loops }, (_, i) => loop(i));
  try {
    await during();
  } finally {
    stopped = true;
    await Promise.all(running);
  }
  return answers;
}

/** How many answers had each status (and code): `{ "200 VALID": 412, "503": 3 }`. */
export const tally = (answers: Timed[]): Record<string, number> =>
  answers.reduce<Record<string, number>>((t, a) => {
    const k = a.code ? `${a.status} ${a.code}` : String(a.status);
    t[k] = (t[k] ?? 0) + 1;
    return t;
  }, {});

/** An app on `store` (with Redis when given) logging into `entries`, a workspace, its `*` root key and an API. */
export interface Served {
  app: App;
  entries: Array<{ level: number; msg: string }>;
  root: string;
  apiId: string;
  call(method: 'GET' | 'POST', url: string, body?: unknown, key?: string): Promise<{ status: number; json: Answer }>;
  /** How many log lines said an outage of `dependency` started, and how many that it ended. */
  outages(dependency: 'store' | 'redis'): { started: number; ended: number };
}

export async function serve(store: Store, redisUrl?: string, options: AppOptions = {}): Promise<Served> {
  const { logger, entries } = capturedLog();
  const app = await buildApp({ store }, { ...options, logger, redisUrl });
  const { workspaceId } = await createWorkspace(store.db, 'outages', OPERATOR);
  const { rootKey: root } = await insertRootKey(store.db, { workspaceId, permissions: ['*'] }, OPERATOR);
  const call: Served['call'] = async (method, url, body, key) => {
    const res = await app.inject({
      method,
      url,
      headers: {
        ...(key ? { authorization: `Bearer ${key}` } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      payload: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.statusCode, json: JSON.parse(res.body) as Answer };
  };
  const api = await call('POST', '/v1/apis.createApi', { name: 'outages' }, root);
  if (api.status !== 200) throw new Error(`createApi failed: ${JSON.stringify(api.json)}`);
  return {
    app,
    entries,
    root,
    apiId: String(api.json.apiId),
    call,
    outages: (dependency) => ({
      started: entries.filter((e) => e.msg.startsWith(`${dependency} is unavailable`)).length,
      ended: entries.filter((e) => e.msg === `${dependency} is available again`).length,
    }),
  };
}

/** A store the test takes away and gives back: `cut()` makes every write fail as unavailable, `restore()` ends that. */
export interface CuttableStore {
  store: Store;
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

/**
 * The database at `url` (already migrated) opened so that the test can take it away: on PostgreSQL through a
 * TcpProxy it cuts (nothing answers, reads included); on SQLite with a 200 ms busy timeout, cut by a write lock
 * another connection holds (`begin immediate`: writes fail, reads still answer), as another process would.
 */
export async function cuttableStore(dialect: 'sqlite' | 'postgres', url: string): Promise<CuttableStore> {
  if (dialect === 'postgres') {
    const proxy = await TcpProxy.start('127.0.0.1', Number(new URL(url).port || 5432));
    const store = openStore(viaPort(url, proxy.port));
    return {
      store,
      cut: () => proxy.cut(),
      restore: () => proxy.restore(),
      close: async () => {
        await store.close();
        await proxy.close();
      },
    };
  }
  const store = openStore(url, { sqliteBusyTimeoutMs: 200 });
  const holder = new DatabaseSync(url.replace(/^sqlite:/, ''));
  return {
    store,
    cut: () => holder.exec('begin immediate'),
    restore: () => holder.exec('rollback'),
    close: async () => {
      if (holder.isTransaction) holder.exec('rollback');
      holder.close();
      await store.close();
    },
  };
}

/** A fresh store (freshStore) opened twice: `direct`, never cut, to look at what was written, and `cuttable`; `close` closes both. */
export async function freshCuttableStore(
  dialect: 'sqlite' | 'postgres',
): Promise<{ direct: Store; cuttable: CuttableStore; close: () => Promise<void> }> {
  const fresh = await freshStore(dialect);
  const cuttable = await cuttableStore(dialect, fresh.url);
  return {
    direct: fresh.store,
    cuttable,
    close: async () => {
      await cuttable.close();
      await fresh.close();
    },
  };
}
