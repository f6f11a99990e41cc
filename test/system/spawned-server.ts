import { randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { ServerProcess, serverEnv } from '../helpers/server-process.ts';
import { freePort } from '../helpers/processes.ts';
import { sleep } from '../helpers/timing.ts';
import type { Answer } from '../helpers/json.ts';

/**
 * One real server process (`src/main.ts`, a ServerProcess of test/helpers/server-process.ts) on a free port of
 * 127.0.0.1, for the crash tests and the soak bench: JSON requests over a keep-alive agent of its own,
 * readiness (GET /v1/liveness), kill -9, graceful stop and its RSS.
 */

const BASE58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
export const newRootKey = (): string => `kh_root_${Array.from({ length: 33 }, () => BASE58[randomInt(BASE58.length)]).join('')}`;

/** An answer of a server process: `json` is the parsed body (its text when it is not JSON), of the shape the caller names. */
export interface Reply<T = Answer> {
  status: number;
  json: T;
}

export class SpawnedServer {
  readonly port: number;
  readonly process: ServerProcess;
  readonly agent: http.Agent;

  /** Starts `src/main.ts` on `databaseUrl`, bootstrapping `rootKey` when the database is new; `env` adds variables (REDIS_URL, …). */
  constructor(port: number, databaseUrl: string, rootKey: string, env: Record<string, string> = {}, sockets = 64) {
    this.port = port;
    this.agent = new http.Agent({ keepAlive: true, maxSockets: sockets });
    const vars = { HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'warn', DATABASE_URL: databaseUrl, KEYHOLD_WORKERS: '0', ...env };
    this.process = new ServerProcess(serverEnv({ ...vars, KEYHOLD_BOOTSTRAP_ROOT_KEY: rootKey }));
  }

  static async start(databaseUrl: string, rootKey: string, env: Record<string, string> = {}): Promise<SpawnedServer> {
    const server = new SpawnedServer(await freePort(), databaseUrl, rootKey, env);
    await server.ready();
    return server;
  }

  get proc() {
    return this.process.proc;
  }

  get exited() {
    return this.process.exited;
  }

  get alive(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null;
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

  get<T = Answer>(path: string, query: Record<string, string>, key?: string): Promise<Reply<T>> {
    return this.request<T>('GET', `${path}?${new URLSearchParams(query)}`, undefined, key);
  }

  /** Waits (bounded) until GET /v1/liveness answers 200; fails at once if the process exits. */
  async ready(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (!this.alive) throw new Error(`the server exited before it was ready:\n${this.process.output}`);
      try {
        if ((await this.get('/v1/liveness', {})).status === 200) return;
      } catch {
        /* not listening yet */
      }
      await sleep(100);
    }
    throw new Error(`the server was not ready within ${timeoutMs} ms:\n${this.process.output}`);
  }

  /** kill -9, and wait for the process to be gone. */
  async kill(): Promise<void> {
    this.proc.kill('SIGKILL');
    await this.exited;
    this.agent.destroy();
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
