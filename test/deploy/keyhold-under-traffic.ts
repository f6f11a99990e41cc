import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { scratchDatabase } from '../helpers/harness.ts';
import { newRootKey, ServerProcess } from '../helpers/server-process.ts';

/** A real server process (SQLite, Redis when the tests have one) that has answered some traffic of every kind. */
export interface KeyholdUnderTraffic {
  server: ServerProcess;
  /** The text of its /metrics. */
  metrics(): Promise<string>;
  close(): Promise<void>;
}

/**
 * Starts `src/main.ts` (process metrics on, as in production) and sends it traffic: an API, keys, valid and
 * unknown verifications (v1 and v2), a refused root key, a webhook endpoint; so that every labelled series exists.
 */
export async function keyholdUnderTraffic(): Promise<KeyholdUnderTraffic> {
  const db = scratchDatabase('sqlite');
  const root = newRootKey();
  const redis = process.env.KEYHOLD_TEST_REDIS_URL;
  const server = await ServerProcess.start(db.url, root, { KEYHOLD_WORKERS: '1', ...(redis ? { REDIS_URL: redis } : {}) });
  try {
    const api = await server.post<{ apiId: string }>('/v1/apis.createApi', { name: 'observed' }, root);
    assert.equal(api.status, 200, JSON.stringify(api.json));
    const made = await server.post<{ key: string }>('/v1/keys.createKey', { apiId: api.json.apiId }, root);
    assert.equal(made.status, 200, JSON.stringify(made.json));
    for (let i = 0; i < 20; i++) {
      await server.post('/v1/keys.verifyKey', { key: made.json.key });
      await server.post('/v2/keys.verifyKey', { key: made.json.key }, root);
    }
    await server.post('/v1/keys.verifyKey', { key: 'kh_not_a_key_at_all' });
    assert.equal((await server.get('/v1/apis.getApi', { apiId: api.json.apiId }, newRootKey())).status, 401);
  } catch (err) {
    await server.stop();
    throw err;
  }
  return {
    server,
    async metrics() {
      const r = await server.get<string>('/metrics', {});
      assert.equal(r.status, 200);
      return r.json;
    },
    async close() {
      await server.stop();
      await db.cleanup();
    },
  };
}

/** The names of the metric families a /metrics text exposes (histograms and summaries by their series' names too). */
export function exposedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{| )/.exec(line);
    if (m) names.add(m[1]);
  }
  return names;
}

/** Runs a tool of Debian's `prometheus` package; fails (never skips) when it is not installed. */
export function prometheusTool(tool: 'promtool' | 'prometheus', args: string[], cwd?: string): { status: number | null; out: string } {
  const r = spawnSync(tool, args, { cwd, encoding: 'utf8', timeout: 120_000 });
  if (r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT')
    assert.fail(`${tool} is not installed: apt-get install -y --no-install-recommends prometheus (Debian's package)`);
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}
