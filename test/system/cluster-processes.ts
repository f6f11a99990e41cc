import assert from 'node:assert/strict';
import { freshStore } from '../helpers/harness.ts';
import { runCli } from '../helpers/cli.ts';
import type { CliAnswer, Loose } from '../helpers/json.ts';
import type { Store } from '../../src/store/store.ts';
import { freePort } from '../helpers/processes.ts';
import { newRootKey, ServerProcess, storeServerEnv } from '../helpers/server-process.ts';

/** Real server processes (`src/main.ts`) sharing one store, and Redis when asked: the clusters of the system tests. */

const REDIS_URL = process.env.KEYHOLD_TEST_REDIS_URL;

export type { Reply } from '../helpers/server-process.ts';
/** A keys.verifyKey answer, with the members these tests compute with. */
export type Verified = Loose<{ code: string; remaining: number }>;

/** One server process of a cluster (a ServerProcess: keep-alive agent of its own, 64 sockets), with its name for messages. */
export class Server extends ServerProcess {
  readonly name: string;

  constructor(name: string, port: number, databaseUrl: string, rootKey: string, env: Record<string, string>) {
    super(storeServerEnv(port, databaseUrl, rootKey, env));
    this.name = name;
  }
}

/** n server processes on one fresh store (and Redis when asked), whose workspace has the `*` root key `root`. */
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
  readonly env: Record<string, string>;

  constructor(dialect: 'sqlite' | 'postgres', size: number, redis: boolean, env: Record<string, string> = {}) {
    this.env = env;
    this.dialect = dialect;
    this.size = size;
    this.redis = redis;
  }

  get label(): string {
    return `${this.dialect}, ${this.size} processes, ${this.redis ? 'Redis' : 'no Redis'}`;
  }

  /**
   * A fresh store; the first process bootstraps the workspace with `root` (and makes the master key), the others
   * start once it is up. Every process is in `servers` as soon as it is spawned: close() stops it even when it
   * never gets ready.
   */
  async start(): Promise<void> {
    const fresh = await freshStore(this.dialect);
    this.store = fresh.store;
    this.url = fresh.url;
    this.#closeStore = fresh.close;
    // Every server runs its background workers, as a deployed node does (storeServerEnv's default is none).
    const env: Record<string, string> = { KEYHOLD_WORKERS: 'true', ...this.env };
    if (this.redis && REDIS_URL) env.REDIS_URL = REDIS_URL;
    const spawnOne = async (i: number) => {
      const server = new Server(`server ${i + 1}`, await freePort(), this.url, this.root, env);
      this.servers.push(server);
      return server;
    };
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

  /** What the processes logged at warn level and above (a Redis or store outage, …), for failure messages. */
  warnings(): string {
    const lines = this.servers.flatMap((s) =>
      s.output
        .split('\n')
        .filter((l) => /"level":[4-6]\d/.test(l) && !l.includes('KEYHOLD_MASTER_KEYS'))
        .map((l) => `${s.name}: ${l}`),
    );
    return lines.length ? lines.join('\n') : '(no warnings logged)';
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
