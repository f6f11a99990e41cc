import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import pg from 'pg';
import pino from 'pino';
import { openStore, type Store } from '../../src/store/store.ts';
import { buildApp, type AppOptions } from '../../src/app.ts';
import { createVault } from '../../src/crypto/vault.ts';
import type { App } from '../../src/http/types.ts';
import { createWorkspace } from '../../src/services/workspaces/workspaces.ts';
import { insertRootKey, revokeRootKey } from '../../src/services/workspaces/root-keys.ts';
import type { Answer } from './json.ts';

/**
 * Usage, once per dialect:  `let w: World; before(async () => { w = await world(dialect); }); after(() => w.close());`
 *
 * The store backends every storage-touching test runs against: SQLite always, PostgreSQL when KEYHOLD_TEST_POSTGRES_URL is set. */
export const DIALECTS: Array<'sqlite' | 'postgres'> = ['sqlite', ...(process.env.KEYHOLD_TEST_POSTGRES_URL ? ['postgres' as const] : [])];

/** The actor of changes a test makes directly through the services, as an operator would with the CLI. */
export const OPERATOR = { type: 'operator' as const, id: 'test' };

/**
 * A place for a new, empty database: a SQLite file in a temp dir, or a new PostgreSQL schema. `cleanup` removes it.
 * When KEYHOLD_TEST_POSTGRES_URL is set and the server is unreachable, using it fails (it never skips).
 */
export function scratchDatabase(dialect: 'sqlite' | 'postgres'): { url: string; cleanup(): Promise<void> } {
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'keyhold-test-'));
    return { url: `sqlite:${join(dir, 'keyhold.db')}`, cleanup: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const base = process.env.KEYHOLD_TEST_POSTGRES_URL!;
  const schema = `kh_test_${randomBytes(6).toString('hex')}`;
  return {
    url: `${base}${base.includes('?') ? '&' : '?'}schema=${schema}`,
    async cleanup() {
      const client = new pg.Client({ connectionString: base });
      await client.connect();
      await client.query(`drop schema if exists ${schema} cascade`);
      await client.end();
    },
  };
}

/**
 * A fresh, migrated store in a scratch database; `close` closes it and removes the database. `open` opens the
 * store on the scratch database's URL (default `openStore`; test/helpers/faults.ts opens one that fails on demand).
 */
export async function freshStore(
  dialect: 'sqlite' | 'postgres',
  open: (url: string) => Store = openStore,
): Promise<{ store: Store; url: string; close(): Promise<void> }> {
  const { url, cleanup } = scratchDatabase(dialect);
  const store = open(url);
  await store.migrate();
  return {
    store,
    url,
    close: async () => {
      await store.close();
      await cleanup();
    },
  };
}

/**
 * An answer to a test request. `json` is the parsed body (undefined when the body is not JSON), of the shape
 * the test names (`w.post<{ apiId: string }>(…)`), or an `Answer` (error envelope typed, the rest loose).
 */
export interface Response<T = Answer> {
  status: number;
  json: T;
  headers: Record<string, unknown>;
  body: string;
}
export interface CallOptions {
  key?: string;
  body?: unknown;
  query?: Record<string, string | number | boolean>;
  headers?: Record<string, string>;
}

/** A test world: an app on a fresh store, one workspace with a `*` root key, and helpers to make more. */
export interface World {
  app: App;
  store: Store;
  url: string;
  workspaceId: string;
  /** A `*` root key of `workspaceId`. */
  root: string;
  /** A new root key of `workspaceId` (or `workspaceId` given) with these permissions. */
  rootKey(permissions: string[], opts?: { workspaceId?: string; expiresAt?: number }): Promise<string>;
  /** A root key of this workspace that has been revoked. */
  revokedRootKey(): Promise<string>;
  /** Another workspace, with its own `*` root key. */
  otherWorkspace(): Promise<{ workspaceId: string; root: string }>;
  post<T = Answer>(path: string, body: unknown, key?: string | null): Promise<Response<T>>;
  get<T = Answer>(path: string, query: Record<string, string | number | boolean>, key?: string | null): Promise<Response<T>>;
  createApi(name?: string, key?: string): Promise<string>;
  createKey(body: Record<string, unknown>, key?: string): Promise<{ keyId: string; key: string }>;
  /** Closes the app and removes the store; call it from the suite's `after`. */
  close(): Promise<void>;
}

/** The parsed JSON body of an injected answer, as the shape the caller names; undefined when the body is not JSON. */
function parsedBody<T = Answer>(res: { json<U>(): U }): T {
  try {
    return res.json<T>();
  } catch {
    return undefined as T;
  }
}

export interface WorldOptions {
  /** Opens the world's store (default `openStore`): the app, the helpers and the test all use that one store. */
  openStore?: (url: string) => Store;
  /** More options of the app (single sign-on, its public URL). */
  app?: AppOptions;
}

export async function world(dialect: 'sqlite' | 'postgres', options: WorldOptions = {}): Promise<World> {
  const { store, url, close } = await freshStore(dialect, options.openStore);
  // A fixed test master key, so recoverable keys work in every route test.
  const app = await buildApp({ store }, { vault: createVault([{ id: 'test', key: Buffer.alloc(32, 7) }]), ...options.app });
  const { workspaceId } = await createWorkspace(store.db, 'test', OPERATOR);
  const rootKey = async (permissions: string[], opts: { workspaceId?: string; expiresAt?: number } = {}) =>
    (await insertRootKey(store.db, { workspaceId: opts.workspaceId ?? workspaceId, permissions, expiresAt: opts.expiresAt }, OPERATOR))
      .rootKey;
  const root = await rootKey(['*']);
  const inject = async <T>(method: 'GET' | 'POST', path: string, opts: CallOptions): Promise<Response<T>> => {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.key) headers.authorization = `Bearer ${opts.key}`;
    if (opts.body !== undefined) headers['content-type'] ??= 'application/json';
    const res = await app.inject({
      method,
      url: path,
      headers,
      query: opts.query ? Object.fromEntries(Object.entries(opts.query).map(([k, v]) => [k, String(v)])) : undefined,
      payload: opts.body === undefined ? undefined : typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body),
    });
    return { status: res.statusCode, json: parsedBody<T>(res), headers: res.headers, body: res.body };
  };
  const w: World = {
    app,
    store,
    url,
    workspaceId,
    root,
    rootKey,
    async close() {
      await app.close();
      await close();
    },
    async revokedRootKey() {
      const { rootKeyId, rootKey: key } = await insertRootKey(store.db, { workspaceId, permissions: ['*'] }, OPERATOR);
      await revokeRootKey(store.db, rootKeyId, OPERATOR);
      return key;
    },
    async otherWorkspace() {
      const other = await createWorkspace(store.db, 'other', OPERATOR);
      return { workspaceId: other.workspaceId, root: await rootKey(['*'], { workspaceId: other.workspaceId }) };
    },
    post: <T>(path: string, body: unknown, key: string | null = root) => inject<T>('POST', path, { body, key: key ?? undefined }),
    get: <T>(path: string, query: Record<string, string | number | boolean>, key: string | null = root) =>
      inject<T>('GET', path, { query, key: key ?? undefined }),
    async createApi(name = 'test-api', key = root) {
      const r = await w.post<{ apiId: string }>('/v1/apis.createApi', { name }, key);
      if (r.status !== 200) throw new Error(`createApi failed: ${r.body}`);
      return r.json.apiId;
    },
    async createKey(body, key = root) {
      const r = await w.post<{ keyId: string; key: string }>('/v1/keys.createKey', body, key);
      if (r.status !== 200) throw new Error(`createKey failed: ${r.body}`);
      return r.json;
    },
  };
  return w;
}

/** A pino logger at level error whose lines are kept in `lines`, for tests that check what a failure logs. */
export function capturedErrorLog(): { logger: pino.Logger; lines: string[] } {
  const lines: string[] = [];
  const logger = pino(
    { level: 'error' },
    new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    }),
  );
  return { logger, lines };
}
