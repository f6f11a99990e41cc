import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { randomInt } from 'node:crypto';
import { freshStore } from '../helpers/harness.ts';
import { runCli } from '../helpers/cli.ts';
import type { Answer, CliAnswer, Loose } from '../helpers/json.ts';
import { REPO_ROOT } from '../helpers/repo.ts';
import { sleep } from '../helpers/timing.ts';
import type { Store } from '../../src/store/store.ts';
import { freePort, reapOnExit } from '../helpers/processes.ts';

/** Real server processes (`src/main.ts`) sharing one store, and Redis when asked: the clusters of the system tests. */

const REDIS_URL = process.env.KEYHOLD_TEST_REDIS_URL;
const BASE58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';

export const newRootKey = () => `kh_root_${Array.from({ length: 33 }, () => BASE58[randomInt(BASE58.length)]).join('')}`;

/** An answer of a server process: `json` is the parsed body (its text when it is not JSON), of the shape the caller names. */
export interface Reply<T = Answer> {
  status: number;
  json: T;
}
/** A keys.verifyKey answer, with the members these tests compute with. */
export type Verified = Loose<{ code: string; remaining: number }>;

/** One server process and a keep-alive agent of its own (64 sockets), so requests to it really run concurrently. */
export class Server {
  readonly port: number;
  readonly proc: ChildProcess;
  readonly agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  #output = '';
  #exited: Promise<void>;
  exitCode: number | null | undefined = undefined;

  readonly name: string;

  constructor(name: string, port: number, env: NodeJS.ProcessEnv) {
    this.name = name;
    this.port = port;
    this.proc = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', 'src/main.ts'], {
      cwd: REPO_ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    reapOnExit(this.proc);
    const keep = (chunk: Buffer) => {
      this.#output = (this.#output + chunk.toString()).slice(-8000);
    };
    this.proc.stdout!.on('data', keep);
    this.proc.stderr!.on('data', keep);
    this.#exited = new Promise((resolve) =>
      this.proc.once('exit', (code) => {
        this.exitCode = code;
        resolve();
      }),
    );
  }

  get output(): string {
    return this.#output;
  }

  request<T = Answer>(method: 'GET' | 'POST', path: string, body?: unknown, key?: string): Promise<Reply<T>> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string> = {};
    if (payload !== undefined) headers['content-type'] = 'application/json';
    if (key) headers.authorization = `Bearer ${key}`;
    return new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port: this.port, method, path, headers, agent: this.agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = text;
          }
          resolve({ status: res.statusCode!, json: json as T });
        });
        res.on('error', reject);
      });
      req.setTimeout(30_000, () => req.destroy(new Error(`${method} ${path} on ${this.name}: no answer within 30 s`)));
      req.on('error', reject);
      req.end(payload);
    });
  }

  post<T = Answer>(path: string, body: unknown, key?: string): Promise<Reply<T>> {
    return this.request<T>('POST', path, body, key);
  }
  get<T = Answer>(path: string, query: Record<string, string>, key?: string): Promise<Reply<T>> {
    return this.request<T>('GET', `${path}?${new URLSearchParams(query)}`, undefined, key);
  }

  /** Waits (bounded) until GET /v1/liveness answers 200; fails at once if the process exits. */
  async ready(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.exitCode !== undefined) throw new Error(`${this.name} exited with ${this.exitCode} before it was ready:\n${this.#output}`);
      try {
        if ((await this.get('/v1/liveness', {})).status === 200) return;
      } catch {
        /* not listening yet */
      }
      await sleep(100);
    }
    throw new Error(`${this.name} was not ready within ${timeoutMs} ms:\n${this.#output}`);
  }

  /** SIGTERM; SIGKILL when it has not ended within 5 s. */
  async stop(): Promise<void> {
    this.agent.destroy();
    if (this.exitCode !== undefined) return;
    this.proc.kill('SIGTERM');
    if (!(await this.#exitWithin(5000))) {
      this.proc.kill('SIGKILL');
      await this.#exitWithin(5000);
    }
  }

  /** Whether the process has exited within `ms` (the timer does not outlive the wait). */
  async #exitWithin(ms: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), ms);
    });
    try {
      return await Promise.race([this.#exited.then(() => true), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** n server processes on one fresh store; the first bootstraps the workspace with `root`. */
export class Cluster {
  servers: Server[] = [];
  store!: Store;
  url!: string;
  root = newRootKey();
  #closeStore?: () => Promise<void>;

  readonly dialect: 'sqlite' | 'postgres';
  readonly size: number;
  readonly redis: boolean;

  /** Environment variables every server gets besides the cluster's own. */
  readonly env: NodeJS.ProcessEnv;

  constructor(dialect: 'sqlite' | 'postgres', size: number, redis: boolean, env: NodeJS.ProcessEnv = {}) {
    this.env = env;
    this.dialect = dialect;
    this.size = size;
    this.redis = redis;
  }

  get label(): string {
    return `${this.dialect}, ${this.size} processes, ${this.redis ? 'Redis' : 'no Redis'}`;
  }

  async start(): Promise<void> {
    const fresh = await freshStore(this.dialect);
    this.store = fresh.store;
    this.url = fresh.url;
    this.#closeStore = fresh.close;
    const spawnOne = async (i: number) => {
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        PORT: String(await freePort()),
        HOST: '127.0.0.1',
        LOG_LEVEL: 'warn',
        DATABASE_URL: this.url,
        KEYHOLD_BOOTSTRAP_ROOT_KEY: this.root,
      };
      Object.assign(env, this.env);
      delete env.REDIS_URL;
      delete env.NODE_TEST_CONTEXT;
      if (this.redis) env.REDIS_URL = REDIS_URL;
      const server = new Server(`server ${i + 1}`, Number(env.PORT), env);
      this.servers.push(server);
      return server;
    };
    // The first one bootstraps; the others start once it is up.
    await (await spawnOne(0)).ready();
    const rest = [];
    for (let i = 1; i < this.size; i++) rest.push(await spawnOne(i));
    await Promise.all(rest.map((s) => s.ready()));
  }

  async close(): Promise<void> {
    try {
      await Promise.all(this.servers.map((s) => s.stop()));
    } finally {
      await this.#closeStore?.();
    }
  }

  async createApi(via: Server): Promise<string> {
    const r = await via.post<{ apiId: string }>('/v1/apis.createApi', { name: 'mp-api' }, this.root);
    assert.equal(r.status, 200, JSON.stringify(r.json));
    return r.json.apiId;
  }

  async createKey(via: Server, body: Record<string, unknown>): Promise<{ keyId: string; key: string }> {
    const r = await via.post<{ keyId: string; key: string }>('/v1/keys.createKey', body, this.root);
    assert.equal(r.status, 200, JSON.stringify(r.json));
    return r.json;
  }
}

/** Runs the CLI in-process against `url` with --json; asserts that it succeeded and returns what it printed. */
export async function cli<T = CliAnswer>(url: string, ...argv: string[]): Promise<T> {
  const r = await runCli<T>({ DATABASE_URL: url }, [...argv, '--json']);
  assert.equal(r.code, 0, [...r.out, ...r.err].join('\n'));
  return r.json;
}
