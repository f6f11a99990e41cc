import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { Unkey } from 'unkey-api-v2';
import { DIALECTS } from '../helpers/harness.ts';
import { startKeyhold, type KeyholdServer } from '../helpers/unkey-server.ts';

// Issue 31: Unkey's v2 SDK (@unkey/api 2.5.1, installed as `unkey-api-v2`) calls analytics.getVerifications and
// analytics.getRatelimits on Keyhold unmodified. The SDK parses each answer with its zod schema ({meta, data: rows}),
// so a call that resolves proves the envelope; a refused query throws the SDK's typed error carrying our code.

interface SdkError {
  statusCode?: number;
  error?: { type?: string; detail?: string; status?: number };
  data$?: { meta?: { requestId?: string } };
}

const isError = (status: number, code: string, detail: RegExp) => (e: SdkError) => {
  assert.equal(e.statusCode, status);
  assert.equal(e.error?.status, status);
  assert.equal(e.error?.type, `https://unkey.com/docs/errors/${code}`);
  assert.match(e.error?.detail ?? '', detail);
  assert.match(e.data$?.meta?.requestId ?? '', /^req_/);
  return true;
};

for (const dialect of DIALECTS) {
  describe(`@unkey/api 2.5.1 analytics against Keyhold (${dialect})`, () => {
    let server: KeyholdServer;
    let unkey: Unkey;
    const now = Date.now();
    before(async () => {
      server = await startKeyhold(dialect);
      unkey = new Unkey({ rootKey: server.root, serverURL: server.baseUrl, retryConfig: { strategy: 'none' } });
      const pg = dialect === 'postgres';
      const tags = (t: string[]) => (pg ? sql`${t}::text[]` : JSON.stringify(t));
      for (const [i, [ws, keyId, outcome]] of [
        [server.workspaceId, 'key_1', 'VALID'],
        [server.workspaceId, 'key_1', 'RATE_LIMITED'],
        [server.workspaceId, 'key_2', 'VALID'],
        ['ws_other', 'key_secret', 'VALID'],
      ].entries()) {
        await sql`insert into analytics_key_verifications (request_id, time, workspace_id, key_space_id, identity_id, external_id, key_id, region, outcome, tags, spent_credits, latency)
          values (${`req_v${i}`}, ${now - 1000 * (i + 1)}, ${ws}, 'api_a', '', '', ${keyId}, 'local', ${outcome}, ${tags(['env=prod'])}, 0, 5)`.execute(
          server.store.db,
        );
      }
      for (const [i, [ws, id, passed]] of [
        [server.workspaceId, 'user_1', 1],
        [server.workspaceId, 'user_1', 0],
        ['ws_other', 'user_secret', 1],
      ].entries()) {
        await sql`insert into analytics_ratelimits (request_id, time, workspace_id, namespace_id, identifier, passed, latency)
          values (${`req_r${i}`}, ${now - 1000}, ${ws}, 'rlns_a', ${id}, ${passed}, 1)`.execute(server.store.db);
      }
    });
    after(() => server.close());

    test('getVerifications resolves with the rows of the caller’s workspace', async () => {
      const res = await unkey.analytics.getVerifications({
        query:
          'SELECT key_id, outcome, count() AS total FROM key_verifications_v1 WHERE time >= now() - INTERVAL 1 DAY GROUP BY key_id, outcome ORDER BY key_id, outcome',
      });
      assert.match(res.meta.requestId, /^req_/);
      assert.deepEqual(res.data, [
        { key_id: 'key_1', outcome: 'RATE_LIMITED', total: 1 },
        { key_id: 'key_1', outcome: 'VALID', total: 1 },
        { key_id: 'key_2', outcome: 'VALID', total: 1 },
      ]);
      const empty = await unkey.analytics.getVerifications({
        query: "SELECT key_id FROM key_verifications_v1 WHERE key_id = 'key_secret'",
      });
      assert.deepEqual(empty.data, []);
    });

    test('getVerifications: a function outside the allow-list throws the SDK error with our code', async () => {
      await assert.rejects(
        unkey.analytics.getVerifications({ query: 'SELECT sleep(3) FROM key_verifications_v1' }),
        isError(400, 'user/bad_request/invalid_analytics_function', /sleep/),
      );
      await assert.rejects(
        unkey.analytics.getVerifications({ query: 'SELECT * FROM ratelimits_v1' }),
        isError(400, 'user/bad_request/invalid_analytics_table', /ratelimits_v1/),
      );
    });

    test('getRatelimits resolves with rows; a bad function is the SDK error with our code', async () => {
      const res = await unkey.analytics.getRatelimits({
        query: 'SELECT identifier, countIf(passed) AS passed, count() AS total FROM ratelimits_v1 GROUP BY identifier',
      });
      assert.match(res.meta.requestId, /^req_/);
      assert.deepEqual(res.data, [{ identifier: 'user_1', passed: 1, total: 2 }]);
      await assert.rejects(
        unkey.analytics.getRatelimits({ query: "SELECT file('/etc/passwd') FROM ratelimits_v1" }),
        isError(400, 'user/bad_request/invalid_analytics_function', /file/),
      );
    });

    test('a root key without read_analytics throws the SDK’s 403', async () => {
      const weak = new Unkey({
        rootKey: await server.rootKey(['api.*.read_key']),
        serverURL: server.baseUrl,
        retryConfig: { strategy: 'none' },
      });
      await assert.rejects(
        weak.analytics.getVerifications({ query: 'SELECT count() FROM key_verifications_v1' }),
        (e: SdkError) => e.statusCode === 403,
      );
    });
  });
}
