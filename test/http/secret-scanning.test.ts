import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, generateKeyPairSync } from 'node:crypto';
import { buildApp } from '../../src/app.ts';
import { openStore } from '../../src/store/store.ts';
import type { App } from '../../src/http/types.ts';
import type { LeakConfig } from '../../src/config/leaks.ts';
import { SECRET_SCANNING_REQUESTS_PER_MINUTE } from '../../src/http/secret-scanning/github.ts';
import { capturedErrorLog, DIALECTS, world, type World } from '../helpers/harness.ts';
import { githubSigner, keysServer } from '../helpers/github-scanning.ts';
import { assertV1ErrorMembers } from '../helpers/errors.ts';
import { rootKeyId } from '../helpers/rows.ts';

const PATH = '/secret-scanning/github';
const signer = githubSigner();
const sha256hex = (s: string) => createHash('sha256').update(s).digest('hex');

type Feedback = Array<{ token_hash: string; token_type: string; label: string }>;

/** Posts `body` (text, sent as is) with `headers` to the world's app. */
const report = async (app: App, body: string, headers: Record<string, string>) => {
  const res = await app.inject({ method: 'POST', url: PATH, headers, payload: body });
  return { status: res.statusCode, body: res.body, json: JSON.parse(res.body || 'null'), headers: res.headers };
};

const item = (token: string, url = 'https://github.com/acme/app/blob/abc/config.js') => ({
  token,
  type: 'keyhold_api_key',
  url,
  source: 'commit',
});

const verifyOn = async (app: App, key: string) =>
  JSON.parse((await app.inject({ method: 'POST', url: '/v1/keys.verifyKey', payload: { key } })).body) as { valid: boolean; code: string };

/** Polls until `check` holds, for at most `ms`; the last result is returned (so a failure shows it). */
async function within<T>(ms: number, probe: () => Promise<T>, check: (v: T) => boolean): Promise<T> {
  const end = Date.now() + ms;
  let v = await probe();
  while (!check(v) && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 20));
    v = await probe();
  }
  return v;
}

const leakAudits = (w: World) =>
  w.store.db.selectFrom('audit_logs').selectAll().where('event', 'in', ['key.leaked', 'root_key.leaked']).orderBy('id').execute();

function assert401(r: { status: number; json: { error: { type: string } }; body: string }) {
  assert.equal(r.status, 401, r.body);
  assert.equal(r.json.error.type, 'https://keyhold.dev/errors/auth/invalid-signature');
  assertV1ErrorMembers(r.json as never, r.body);
}

for (const dialect of DIALECTS) {
  for (const source of ['file', 'url'] as const) {
    describe(`POST /secret-scanning/github, keys from a ${source} (${dialect})`, () => {
      let w: World;
      let other: App;
      let otherClose: () => Promise<void>;
      let server: Awaited<ReturnType<typeof keysServer>>;
      let apiId: string;
      before(async () => {
        server = await keysServer(() => signer.document);
        const leaks: LeakConfig = {
          action: 'disable',
          github: source === 'file' ? { keysFile: signer.file, keysUrl: 'http://127.0.0.1:9/unused' } : { keysUrl: server.url },
        };
        w = await world(dialect, { app: { leaks } });
        // A second node on the same database: it learns of changes only through the change mechanism.
        const store = openStore(w.url);
        other = await buildApp({ store }, { leaks });
        otherClose = async () => {
          await other.close();
          await store.close();
        };
        apiId = await w.createApi('leaky');
      });
      after(async () => {
        await otherClose();
        await w.close();
        await server.close();
      });

      test('a live key is disabled everywhere within 1 s, a root key revoked, an unknown token labelled false_positive', async () => {
        const { key, keyId } = await w.createKey({ apiId, prefix: 'sk' });
        const root = await w.rootKey(['api.*.read_api']);
        // Both nodes have the key cached as valid before the report.
        assert.equal((await verifyOn(w.app, key)).valid, true);
        assert.equal((await verifyOn(other, key)).valid, true);
        const unknown = 'sk_notakeyholdkey1234567890';
        const body = JSON.stringify([item(key), item(root), item(unknown)]);
        const r = await report(w.app, body, signer.headers(body));
        assert.equal(r.status, 200, r.body);
        assert.deepEqual(r.json as Feedback, [
          { token_hash: sha256hex(key), token_type: 'keyhold_api_key', label: 'true_positive' },
          { token_hash: sha256hex(root), token_type: 'keyhold_api_key', label: 'true_positive' },
          { token_hash: sha256hex(unknown), token_type: 'keyhold_api_key', label: 'false_positive' },
        ]);
        for (const node of [w.app, other]) {
          const v = await within(
            1000,
            () => verifyOn(node, key),
            (x) => x.code === 'DISABLED',
          );
          assert.equal(v.code, 'DISABLED', 'disabled on every node within 1 s');
        }
        assert.equal((await w.get('/v1/apis.getApi', { apiId }, root)).status, 401, 'the leaked root key is refused');

        const audits = await leakAudits(w);
        assert.deepEqual(
          audits.map((a) => [a.event, a.actor_type, a.actor_id, a.target_id]),
          [
            ['key.leaked', 'secret_scanning', 'github', keyId],
            ['root_key.leaked', 'secret_scanning', 'github', await rootKeyId(w, root)],
          ],
        );
        for (const a of audits) {
          assert.deepEqual(JSON.parse(a.diff!).url, item(key).url);
          assert.equal(JSON.parse(a.diff!).source, 'commit');
          assert.ok(!JSON.stringify(a).includes(key) && !JSON.stringify(a).includes(root), 'no secret in an audit record');
        }

        // The same report again: the same answer, nothing more changed or recorded.
        const before = await w.store.db.selectFrom('audit_logs').select('id').execute();
        const again = await report(w.app, body, signer.headers(body));
        assert.equal(again.status, 200);
        assert.deepEqual(again.json, r.json);
        assert.equal((await w.store.db.selectFrom('audit_logs').select('id').execute()).length, before.length);
      });

      test('no signature, a bad one, an unknown identifier or a body changed after signing: 401, nothing changes', async () => {
        const { key, keyId } = await w.createKey({ apiId });
        const body = JSON.stringify([item(key)]);
        const good = signer.headers(body);
        const stranger = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
        const cases: Array<[string, string, Record<string, string>]> = [
          ['no signature', body, { 'content-type': 'application/json' }],
          [
            'no identifier',
            body,
            { 'content-type': 'application/json', 'github-public-key-signature': good['github-public-key-signature'] },
          ],
          ['signed by another key', body, signer.headers(body, stranger)],
          ['not base64 DER', body, { ...good, 'github-public-key-signature': 'bm90IGEgc2lnbmF0dXJl' }],
          ['unknown identifier', body, { ...good, 'github-public-key-identifier': 'f'.repeat(64) }],
          ['body changed after signing', JSON.stringify([item(key, 'https://evil.example')]), good],
          ['empty body', '', good],
        ];
        for (const [why, payload, headers] of cases) {
          const r = await report(w.app, payload, headers);
          assert401(r);
          assert.ok(r.status === 401, why);
        }
        assert.equal((await verifyOn(w.app, key)).valid, true);
        assert.equal((await w.store.db.selectFrom('audit_logs').select('id').where('target_id', '=', keyId).execute()).length, 1);
      });

      test('bounds: more than 1,000 tokens is a 400, more than 1 MiB a 413; invalid items a 400; nothing changes', async () => {
        const { key } = await w.createKey({ apiId });
        const many = JSON.stringify(Array.from({ length: 1001 }, () => item(key)));
        const r = await report(w.app, many, signer.headers(many));
        assert.equal(r.status, 400, r.body);
        const big = JSON.stringify([{ ...item(key), url: 'x'.repeat(1024 * 1024) }]);
        assert.equal((await report(w.app, big, signer.headers(big))).status, 413);
        const bad = JSON.stringify([{ type: 'x' }]);
        const invalidItem = await report(w.app, bad, signer.headers(bad));
        assert.equal(invalidItem.status, 400, invalidItem.body);
        const notJson = '[{"token":';
        assert.equal((await report(w.app, notJson, signer.headers(notJson))).status, 400);
        assert.equal((await verifyOn(w.app, key)).valid, true);
      });

      if (source === 'url') {
        test('an unknown identifier refetches the keys at most once a minute; an unreachable URL is a fast 503', async () => {
          const fetched = server.requests();
          const body = JSON.stringify([item('sk_nothing')]);
          const unknown = { ...signer.headers(body), 'github-public-key-identifier': 'a'.repeat(64) };
          for (let i = 0; i < 3; i++) assert401(await report(w.app, body, unknown));
          assert.ok(server.requests() - fetched <= 1, `${server.requests() - fetched} fetches for 3 unknown identifiers`);

          // A node that has never loaded the keys and cannot reach them answers 503 (bounded by the fetch timeout).
          server.hang(true);
          const cold = await buildApp({ store: w.store }, { leaks: { action: 'disable', github: { keysUrl: server.url } } });
          try {
            const r = await report(cold, body, signer.headers(body));
            assert.equal(r.status, 503, r.body);
            assert.equal(r.json.error.type, 'https://keyhold.dev/errors/upstream/unavailable');
          } finally {
            server.hang(false);
            await cold.close();
          }
        });
      }

      test(`rate limited per address: more than ${SECRET_SCANNING_REQUESTS_PER_MINUTE} reports a minute are a 429`, async () => {
        const body = '[]';
        const headers = { ...signer.headers(body) };
        // The limiter counts in windows aligned to the minute: a burst that crosses a minute's end starts counting
        // again, so the burst is sent again, from another address, until one fits in a single window.
        let answers: number[] = [];
        for (let attempt = 0; attempt < 3; attempt++) {
          const minute = Math.floor(Date.now() / 60_000);
          answers = [];
          for (let i = 0; i <= SECRET_SCANNING_REQUESTS_PER_MINUTE; i++) {
            const remoteAddress = `198.51.100.${7 + 10 * attempt}`;
            const res = await w.app.inject({ method: 'POST', url: PATH, headers, payload: body, remoteAddress });
            answers.push(res.statusCode);
          }
          if (Math.floor(Date.now() / 60_000) === minute) break;
        }
        assert.deepEqual(answers.slice(0, -1), Array(SECRET_SCANNING_REQUESTS_PER_MINUTE).fill(200));
        assert.equal(answers.at(-1), 429);
        const elsewhere = await w.app.inject({ method: 'POST', url: PATH, headers, payload: body, remoteAddress: '198.51.100.8' });
        assert.notEqual(elsewhere.statusCode, 429, 'another address is not limited');
      });
    });
  }

  describe(`leaked-key actions (${dialect})`, () => {
    for (const action of ['delete', 'notify'] as const) {
      test(`KEYHOLD_LEAKED_KEY_ACTION=${action}`, async () => {
        const w = await world(dialect, { app: { leaks: { action, github: { keysFile: signer.file, keysUrl: 'http://127.0.0.1:9/' } } } });
        try {
          const apiId = await w.createApi();
          const { key, keyId } = await w.createKey({ apiId });
          const body = JSON.stringify([item(key)]);
          assert.equal((await report(w.app, body, signer.headers(body))).status, 200);
          const v = await verifyOn(w.app, key);
          assert.equal(v.code, action === 'delete' ? 'NOT_FOUND' : 'VALID');
          const events = (
            await w.store.db.selectFrom('audit_logs').select('event').where('target_id', '=', keyId).orderBy('id').execute()
          ).map((a) => a.event);
          assert.deepEqual(events, action === 'delete' ? ['key.create', 'key.delete', 'key.leaked'] : ['key.create', 'key.leaked']);
        } finally {
          await w.close();
        }
      });
    }

    test('no token in a log line, a metric, an error answer or an audit record', async () => {
      const { logger, lines } = capturedErrorLog();
      const w = await world(dialect, {
        app: { logger, accessLog: true, leaks: { action: 'disable', github: { keysFile: signer.file, keysUrl: 'http://127.0.0.1:9/' } } },
      });
      try {
        const apiId = await w.createApi();
        const { key } = await w.createKey({ apiId });
        const body = JSON.stringify([item(key), item('sk_other_secret_token_value_123456')]);
        const answers = [
          await report(w.app, body, signer.headers(body)),
          await report(w.app, body, { 'content-type': 'application/json' }),
          await report(w.app, `${body}x`, signer.headers(body)),
          await report(w.app, body.replace('"type"', '"type":1,"x"'), signer.headers(body)),
        ];
        const metrics = (await w.app.inject({ method: 'GET', url: '/metrics' })).body;
        const audits = JSON.stringify(await w.store.db.selectFrom('audit_logs').selectAll().execute());
        for (const text of [...lines, ...answers.map((a) => a.body), metrics, audits]) {
          assert.ok(!text.includes(key) && !text.includes('sk_other_secret_token_value'), text.slice(0, 300));
        }
      } finally {
        await w.close();
      }
    });

    test('without KEYHOLD_SECRET_SCANNING=github the route does not exist', async () => {
      const w = await world(dialect);
      try {
        const res = await w.app.inject({ method: 'POST', url: PATH, headers: { 'content-type': 'application/json' }, payload: '[]' });
        assert.equal(res.statusCode, 404);
      } finally {
        await w.close();
      }
    });
  });
}
