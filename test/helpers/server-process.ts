import { spawn, type ChildProcess } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { REPO_ROOT } from './repo.ts';
import { freePort, reapOnExit } from './processes.ts';
import { sleep } from './timing.ts';
import type { Answer } from './json.ts';

/**
 * The one helper for a real server process (`src/main.ts`, or `npm start`) in a test or a bench: its output,
 * its exit, and JSON requests to it over a keep-alive agent of its own. Every system test, the backup and
 * schema-version tests and the benches start their servers with it.
 */

const BASE58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
/** A root key of the generated shape, for KEYHOLD_BOOTSTRAP_ROOT_KEY. */
export const newRootKey = (): string => `kh_root_${Array.from({ length: 33 }, () => BASE58[randomInt(BASE58.length)]).join('')}`;

/** The test process' environment without any Keyhold setting, plus `vars`: a server sees only what a test gives it. */
export function serverEnv(vars: Record<string, string>): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of Object.keys(env)) {
    if (/^(KEYHOLD_|HOST$|PORT$|LOG_LEVEL$|DATABASE_URL$|REDIS_URL$)/.test(name)) delete env[name];
  }
  return { ...env, ...vars };
}

/**
 * The environment of a server on 127.0.0.1:`port` over `databaseUrl`, bootstrapping `rootKey` when the database
 * is new, logging warnings only and running no background worker; `env` adds or overrides variables.
 */
export function storeServerEnv(port: number, databaseUrl: string, rootKey: string, env: Record<string, string> = {}): NodeJS.ProcessEnv {
  const vars = { HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'warn', DATABASE_URL: databaseUrl, KEYHOLD_WORKERS: '0', ...env };
  return serverEnv({ ...vars, KEYHOLD_BOOTSTRAP_ROOT_KEY: rootKey });
}

/** An answer of a server process: `json` is the parsed body (its text when it is not JSON), of the shape the caller names. */
export interface Reply<T = Answer> {
  status: number;
  json: T;
}

export interface ServerProcessOptions {
  /** `npm start` in a process group of its own, as a service manager or the contract smoke runs it. */
  viaNpm?: boolean;
  /** Sockets of the keep-alive agent its requests use (default 64). */
  sockets?: number;
}

/** A server process with its output kept; requests go to 127.0.0.1 on the PORT of its environment. */
export class ServerProcess {
  readonly proc: ChildProcess;
  readonly port: number;
  readonly agent: http.Agent;
  stdout = '';
  stderr = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(env: NodeJS.ProcessEnv, opts: ServerProcessOptions = {}) {
    const [command, args] = opts.viaNpm
      ? ['npm', ['start', '--silent']]
      : [process.execPath, ['--disable-warning=ExperimentalWarning', 'src/main.ts']];
    this.port = Number(env.PORT);
    this.agent = new http.Agent({ keepAlive: true, maxSockets: opts.sockets ?? 64 });
    this.proc = spawn(command, args, { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: opts.viaNpm });
    reapOnExit(this.proc);
    this.proc.stdout!.on('data', (chunk: Buffer) => {
      this.stdout += chunk;
    });
    this.proc.stderr!.on('data', (chunk: Buffer) => {
      this.stderr += chunk;
    });
    this.exited = new Promise((resolve) =>
      this.proc.once('exit', (code, signal) => {
        this.agent.destroy();
        resolve({ code, signal });
      }),
    );
  }

  /** A server on a free port over `databaseUrl` (storeServerEnv), once it answers GET /v1/liveness; killed when it does not. */
  static async start(databaseUrl: string, rootKey: string, env: Record<string, string> = {}): Promise<ServerProcess> {
    const server = new ServerProcess(storeServerEnv(await freePort(), databaseUrl, rootKey, env));
    try {
      await server.ready();
    } catch (err) {
      await server.kill(); // the caller never gets it to stop: nothing may be left running
      throw err;
    }
    return server;
  }

  get output(): string {
    return this.stdout + this.stderr;
  }

  get alive(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null;
  }

  /** Resolves once stdout has a line matching `pattern`; rejects if the process exits first or `timeoutMs` pass. */
  async waitFor(pattern: RegExp, timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let exited = false;
    void this.exited.then(() => {
      exited = true;
    });
    while (!pattern.test(this.stdout)) {
      if (exited || Date.now() > deadline) throw new Error(`no ${pattern} (${exited ? 'exited' : 'timed out'}):\n${this.output}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  /** Waits (bounded) until GET /v1/liveness answers 200; fails at once if the process exits. */
  async ready(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (!this.alive) throw new Error(`the server exited before it was ready:\n${this.output}`);
      try {
        if ((await this.get('/v1/liveness', {})).status === 200) return;
      } catch {
        /* not listening yet */
      }
      await sleep(100);
    }
    throw new Error(`the server was not ready within ${timeoutMs} ms:\n${this.output}`);
  }

  /** A JSON request; rejects when the connection fails (refused, reset, or no answer within 30 s). */
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
          let json: unknown = text;
          try {
            json = JSON.parse(text);
          } catch {
            /* not JSON: the text */
          }
          resolve({ status: res.statusCode!, json: json as T });
        });
        res.on('error', reject);
      });
      req.setTimeout(30_000, () => req.destroy(new Error(`${method} ${path}: no answer within 30 s`)));
      req.on('error', reject);
      req.end(payload);
    });
  }

  post<T = Answer>(path: string, body: unknown, key?: string): Promise<Reply<T>> {
    return this.request<T>('POST', path, body, key);
  }

  get<T = Answer>(path: string, query: Record<string, string> = {}, key?: string): Promise<Reply<T>> {
    const search = new URLSearchParams(query).toString();
    return this.request<T>('GET', search ? `${path}?${search}` : path, undefined, key);
  }

  /** The exit, within `timeoutMs` (then SIGKILL and a failure). */
  async exit(timeoutMs = 20_000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        this.proc.kill('SIGKILL');
        reject(new Error(`did not exit within ${timeoutMs} ms:\n${this.output}`));
      }, timeoutMs);
    });
    try {
      return await Promise.race([this.exited, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** kill -9, and wait for the process to be gone. */
  async kill(): Promise<void> {
    this.proc.kill('SIGKILL');
    await this.exited;
  }

  /** SIGTERM (graceful stop); SIGKILL when it has not ended within 10 s. */
  async stop(): Promise<void> {
    if (this.alive) {
      this.proc.kill('SIGTERM');
      const timer = setTimeout(() => this.proc.kill('SIGKILL'), 10_000);
      await this.exited;
      clearTimeout(timer);
    }
    this.agent.destroy();
  }

  /** The process' resident set size in bytes (Linux /proc), or undefined elsewhere or once it has exited. */
  rss(): number | undefined {
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${this.proc.pid}/status`, 'utf8'));
      return m ? Number(m[1]) * 1024 : undefined;
    } catch {
      return undefined;
    }
  }
}
