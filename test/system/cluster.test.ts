import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { randomInt } from 'node:crypto';
import { DIALECTS, freshStore } from '../helpers/harness.ts';
import { runCli } from '../helpers/cli.ts';
import type { Answer, CliAnswer, Loose } from '../helpers/json.ts';
import { REPO_ROOT } from '../helpers/repo.ts';
import { sleep } from '../helpers/timing.ts';
import type { Store } from '../../src/store/store.ts';
import { freePort, reapOnExit } from '../helpers/processes.ts';

/**
 * Real server processes (`src/main.ts`) sharing one store — and Redis when KEYHOLD_TEST_REDIS_URL is set —
 * proving the cluster guarantees of SPEC §5 and §8: credits are exact across processes, and deletion,
 * disabling, role changes and root-key revocation (by another server or by the CLI) reach every server
 * within 1 s. Measured propagation delays are printed as test diagnostics.
 */

const REDIS_URL = process.env.KEYHOLD_TEST_REDIS_URL;
const BASE58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
const PROPAGATION_BOUND_MS = 1000;
const POLL_MS = 20;

const newRootKey = () => `kh_root_${Array.from({ length: 33 }, () => BASE58[randomInt(BASE58.length)]).join('')}`;

/** An answer of a server process: `json` is the parsed body (its text when it is not JSON), of the shape the caller names. */
interface Reply<T = Answer> {
  status: number;
  json: T;
}
/** A keys.verifyKey answer, with the members these tests compute with. */
type Verified = Loose<{ code: string; remaining: number }>;

/** One server process and a keep-alive agent of its own (64 sockets), so requests to it really run concurrently. */
class Server {
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
class Cluster {
  servers: Server[] = [];
  store!: Store;
  url!: string;
  root = newRootKey();
  #closeStore?: () => Promise<void>;

  readonly dialect: 'sqlite' | 'postgres';
  readonly size: number;
  readonly redis: boolean;

  constructor(dialect: 'sqlite' | 'postgres', size: number, redis: boolean) {
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

/**
 * Polls `check` on a server every 20 ms, from `t0` (the moment the change's response arrived), until it
 * holds, for at most 1.5 s (a bit past the bound, so a slow propagation is measured, not only failed).
 * Returns the delay from t0 to the first response showing the change, or null if it never did.
 */
async function propagation(check: () => Promise<boolean>, t0: number): Promise<number | null> {
  while (Date.now() - t0 <= PROPAGATION_BOUND_MS + 500) {
    if (await check()) return Date.now() - t0;
    await sleep(POLL_MS);
  }
  return null;
}

/** Waits for each of `servers` to show the change; records the delays and asserts the 1 s bound. */
async function expectEverywhere(
  what: string,
  servers: Server[],
  check: (s: Server) => Promise<boolean>,
  t0: number,
  delays: Record<string, number[]>,
): Promise<void> {
  const measured = await Promise.all(servers.map((s) => propagation(() => check(s), t0)));
  delays[what] ??= [];
  delays[what].push(...measured.map((d) => d ?? Infinity));
  measured.forEach((d, i) => {
    assert.ok(
      d !== null && d <= PROPAGATION_BOUND_MS,
      `${what}: ${servers[i].name} showed it after ${d ?? '> 1500'} ms (bound ${PROPAGATION_BOUND_MS} ms)`,
    );
  });
}

/** Runs the CLI in-process against `url` with --json; asserts that it succeeded and returns what it printed. */
async function cli<T = CliAnswer>(url: string, ...argv: string[]): Promise<T> {
  const r = await runCli<T>({ DATABASE_URL: url }, [...argv, '--json']);
  assert.equal(r.code, 0, [...r.out, ...r.err].join('\n'));
  return r.json;
}

/** Credits: `total` concurrent verifications spread round-robin over the cluster's servers, on `credits` credits. */
function creditsCase(c: Cluster, total: number, credits: number) {
  test(`${total} concurrent verifications over ${c.size} processes of a key with ${credits} credits → exactly ${credits} VALID`, async (t) => {
    const [first] = c.servers;
    const apiId = await c.createApi(first);
    const { keyId, key } = await c.createKey(first, { apiId, remaining: credits });
    const started = Date.now();
    const replies = await Promise.all(
      Array.from({ length: total }, (_, i) => c.servers[i % c.servers.length].post<Verified>('/v1/keys.verifyKey', { key })),
    );
    const elapsed = Date.now() - started;
    const counts: Record<string, number> = {};
    for (const r of replies) {
      const tag = r.status === 200 ? r.json.code : `HTTP ${r.status}`;
      counts[tag] = (counts[tag] ?? 0) + 1;
    }
    t.diagnostic(`[${c.label}] ${total} verifications in ${elapsed} ms: ${JSON.stringify(counts)}`);
    assert.deepEqual(counts, { VALID: credits, USAGE_EXCEEDED: total - credits });
    // Every VALID reported a distinct count left: 0..credits-1, each exactly once.
    const left = replies
      .filter((r) => r.json.code === 'VALID')
      .map((r) => r.json.remaining)
      .sort((a, b) => a - b);
    assert.deepEqual(
      left,
      Array.from({ length: credits }, (_, i) => i),
    );
    for (const s of c.servers) {
      const got = await s.get('/v1/keys.getKey', { keyId }, c.root);
      assert.equal(got.status, 200, JSON.stringify(got.json));
      assert.equal(got.json.remaining, 0, `${s.name}: getKey shows remaining 0`);
    }
    const row = await c.store.db.selectFrom('keys').select('remaining').where('id', '=', keyId).executeTakeFirstOrThrow();
    assert.equal(row.remaining, 0, 'the store holds remaining 0');
  });
}

/** Revocation, disabling, deletion, role changes and root-key revocation reach every server within 1 s. */
function propagationCases(c: Cluster) {
  const delays: Record<string, number[]> = {};
  let apiId: string;
  const verify = (s: Server, body: Record<string, unknown>) =>
    s.post<Verified>('/v1/keys.verifyKey', body).then((r) => {
      assert.equal(r.status, 200, JSON.stringify(r.json));
      return r.json.code;
    });
  const others = () => c.servers.slice(1);

  test('deleteKey on server 1 → NOT_FOUND on every other server within 1 s', async () => {
    const [a] = c.servers;
    apiId = await c.createApi(a);
    const { keyId, key } = await c.createKey(a, { apiId });
    for (const s of c.servers) assert.equal(await verify(s, { key }), 'VALID', `${s.name} verifies (and caches) the key`);
    const del = await a.post('/v1/keys.deleteKey', { keyId }, c.root);
    const t0 = Date.now();
    assert.equal(del.status, 200, JSON.stringify(del.json));
    assert.equal(await verify(a, { key }), 'NOT_FOUND', 'the deleting server sees it at once');
    await expectEverywhere('deleteKey → NOT_FOUND', others(), async (s) => (await verify(s, { key })) === 'NOT_FOUND', t0, delays);
  });

  test('updateKey {enabled:false} on server 1 → DISABLED on every other server within 1 s; re-enabling too', async () => {
    const [a] = c.servers;
    const { keyId, key } = await c.createKey(a, { apiId });
    for (const s of c.servers) assert.equal(await verify(s, { key }), 'VALID');
    let res = await a.post('/v1/keys.updateKey', { keyId, enabled: false }, c.root);
    let t0 = Date.now();
    assert.equal(res.status, 200, JSON.stringify(res.json));
    assert.equal(await verify(a, { key }), 'DISABLED');
    await expectEverywhere(
      'updateKey enabled:false → DISABLED',
      others(),
      async (s) => (await verify(s, { key })) === 'DISABLED',
      t0,
      delays,
    );
    res = await a.post('/v1/keys.updateKey', { keyId, enabled: true }, c.root);
    t0 = Date.now();
    assert.equal(res.status, 200, JSON.stringify(res.json));
    await expectEverywhere('updateKey enabled:true → VALID', others(), async (s) => (await verify(s, { key })) === 'VALID', t0, delays);
  });

  test('keys.setRoles and permissions.deleteRole on server 1 → the authorization outcome changes on every other server within 1 s', async () => {
    const [a] = c.servers;
    const role = await a.post('/v1/permissions.createRole', { name: `reporter_${randomInt(1e9)}`, permissions: ['reports.read'] }, c.root);
    assert.equal(role.status, 200, JSON.stringify(role.json));
    const { keyId, key } = await c.createKey(a, { apiId });
    const q = { key, authorization: { permissions: 'reports.read' } };
    for (const s of c.servers) assert.equal(await verify(s, q), 'INSUFFICIENT_PERMISSIONS', `${s.name} caches the key without the role`);
    const set = await a.post('/v1/keys.setRoles', { keyId, roles: [{ id: role.json.roleId }] }, c.root);
    let t0 = Date.now();
    assert.equal(set.status, 200, JSON.stringify(set.json));
    assert.equal(await verify(a, q), 'VALID');
    await expectEverywhere('setRoles → VALID', others(), async (s) => (await verify(s, q)) === 'VALID', t0, delays);
    const del = await a.post('/v1/permissions.deleteRole', { roleId: role.json.roleId }, c.root);
    t0 = Date.now();
    assert.equal(del.status, 200, JSON.stringify(del.json));
    await expectEverywhere(
      'deleteRole → INSUFFICIENT_PERMISSIONS',
      others(),
      async (s) => (await verify(s, q)) === 'INSUFFICIENT_PERMISSIONS',
      t0,
      delays,
    );
  });

  test('after a burst of 6,000 changes made elsewhere, a deleteKey on server 1 still reaches every other server within 1 s', async () => {
    const [a] = c.servers;
    const { keyId, key } = await c.createKey(a, { apiId });
    for (const s of c.servers) assert.equal(await verify(s, { key }), 'VALID');
    // As another process would commit them (e.g. a bulk keys.updateRemaining run): more than one page of the change feed.
    for (let i = 0; i < 6000; i += 500) {
      const at = Date.now();
      await c.store.db
        .insertInto('change_feed')
        .values(
          Array.from({ length: 500 }, (_, j) => ({
            id: `chg_burst_${randomInt(1e12)}_${i + j}`,
            kind: 'key',
            ref: `key_burst_${i + j}`,
            created_at: at,
          })),
        )
        .execute();
    }
    const del = await a.post('/v1/keys.deleteKey', { keyId }, c.root);
    const t0 = Date.now();
    assert.equal(del.status, 200, JSON.stringify(del.json));
    await expectEverywhere(
      'deleteKey after a 6,000-change burst → NOT_FOUND',
      others(),
      async (s) => (await verify(s, { key })) === 'NOT_FOUND',
      t0,
      delays,
    );
  });

  test('a root key created with the CLI works on the servers; revoked with the CLI → 401 on every server within 1 s', async () => {
    const b = c.servers[1];
    const { id: workspaceId } = await c.store.db.selectFrom('workspaces').select('id').executeTakeFirstOrThrow();
    const created = await cli<{ rootKeyId: string; rootKey: string }>(
      c.url,
      'root-keys',
      'create',
      '--workspace',
      workspaceId,
      '--permission',
      'api.*.read_api',
      '--name',
      'mp',
    );
    const read = (s: Server) => s.get('/v1/apis.getApi', { apiId }, created.rootKey);
    const first = await read(b);
    assert.equal(first.status, 200, JSON.stringify(first.json));
    assert.equal(first.json.id, apiId);
    for (const s of c.servers) assert.equal((await read(s)).status, 200, `${s.name} accepts the new root key`);
    await cli(c.url, 'root-keys', 'revoke', '--id', created.rootKeyId);
    const t0 = Date.now();
    await expectEverywhere(
      'CLI root-keys revoke → 401',
      c.servers,
      async (s) => {
        const r = await read(s);
        if (r.status === 401) assert.equal(r.json.error.type, 'https://keyhold.dev/errors/auth/revoked');
        return r.status === 401;
      },
      t0,
      delays,
    );
  });

  test('propagation delays (diagnostic)', (t) => {
    for (const [what, ms] of Object.entries(delays)) t.diagnostic(`[${c.label}] ${what}: ${ms.join(', ')} ms`);
  });
}

for (const dialect of DIALECTS) {
  if (dialect === 'postgres') {
    describe(`cluster: PostgreSQL, 3 server processes, ${REDIS_URL ? 'Redis' : 'no Redis'}`, () => {
      const c = new Cluster('postgres', 3, REDIS_URL !== undefined);
      before(() => c.start());
      after(() => c.close());
      creditsCase(c, 2000, 500);
      propagationCases(c);
    });
    if (REDIS_URL) {
      describe('cluster: PostgreSQL, 2 server processes, no Redis (change feed only)', () => {
        const c = new Cluster('postgres', 2, false);
        before(() => c.start());
        after(() => c.close());
        propagationCases(c);
      });
    }
  } else {
    describe('cluster: one SQLite file, 2 server processes', () => {
      const c = new Cluster('sqlite', 2, false);
      before(() => c.start());
      after(() => c.close());
      creditsCase(c, 2000, 500);
      propagationCases(c);
    });
  }
}
