import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import pino from 'pino';
import { buildApp, type AppOptions } from '../../src/app.ts';
import type { App } from '../../src/http/types.ts';
import type { Store } from '../../src/store/store.ts';
import { insertRootKey } from '../../src/services/workspaces/root-keys.ts';
import { createWorkspace } from '../../src/services/workspaces/workspaces.ts';
import { DIALECTS, freshStore, OPERATOR } from '../helpers/harness.ts';
import { windowWithRoom } from '../helpers/timing.ts';

/** A pino logger at `info` whose lines are kept, parsed. */
function capturedLog(): { logger: pino.Logger; lines: Array<Record<string, unknown>>; text: () => string } {
  const raw: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      raw.push(String(chunk));
      done();
    },
  });
  return {
    logger: pino({ level: 'info' }, sink),
    get lines() {
      return raw.map((l) => JSON.parse(l) as Record<string, unknown>);
    },
    text: () => raw.join(''),
  };
}

const accessLines = (log: ReturnType<typeof capturedLog>) => log.lines.filter((l) => l.msg === 'request');

for (const dialect of DIALECTS) {
  describe(`hooks: access log and root-key failure limit (${dialect})`, () => {
    let store: Store;
    let close: () => Promise<void>;
    let root: string;
    const apps: App[] = [];
    before(async () => {
      ({ store, close } = await freshStore(dialect));
      const { workspaceId } = await createWorkspace(store.db, 'hooks', OPERATOR);
      ({ rootKey: root } = await insertRootKey(store.db, { workspaceId, permissions: ['*'] }, OPERATOR));
    });
    after(async () => {
      for (const app of apps) await app.close();
      await close();
    });
    const app = async (options: AppOptions) => {
      const built = await buildApp({ store }, options);
      apps.push(built);
      return built;
    };

    test('on: one line per request with method, route, status, ms and request id; never a key or a query value', async () => {
      const log = capturedLog();
      const a = await app({ logger: log.logger, accessLog: true });
      const secretish = 'kh_root_QueryValueThatMustNotBeLogged1';
      const got = await a.inject({
        method: 'GET',
        url: `/v1/apis.getApi?apiId=api_missing&note=${secretish}`,
        headers: { authorization: `Bearer ${root}` },
      });
      const created = await a.inject({
        method: 'POST',
        url: '/v1/apis.createApi',
        headers: { authorization: `Bearer ${root}`, 'content-type': 'application/json' },
        payload: { name: 'logged-api' },
      });
      const unknown = await a.inject({ method: 'GET', url: `/nowhere/${secretish}` });
      const lines = accessLines(log);
      assert.deepEqual(
        lines.map(({ method, route, status, requestId }) => ({ method, route, status, requestId })),
        [
          { method: 'GET', route: '/v1/apis.getApi', status: 404, requestId: got.headers['x-request-id'] },
          { method: 'POST', route: '/v1/apis.createApi', status: 200, requestId: created.headers['x-request-id'] },
          { method: 'GET', route: 'unknown', status: 404, requestId: unknown.headers['x-request-id'] },
        ],
      );
      for (const line of lines) assert.equal(typeof line.ms, 'number');
      assert.equal(log.text().includes(root.slice(8)), false, 'no root key');
      assert.equal(log.text().includes('QueryValueThatMustNotBeLogged'), false, 'no query string or path value');
    });

    test('the verification lane logs its requests the same way, without the key', async () => {
      const log = capturedLog();
      const a = await app({ logger: log.logger, accessLog: true });
      const headers = { authorization: `Bearer ${root}`, 'content-type': 'application/json' };
      const { apiId } = (await a.inject({ method: 'POST', url: '/v1/apis.createApi', headers, payload: { name: 'lane-api' } })).json();
      const { key } = (await a.inject({ method: 'POST', url: '/v1/keys.createKey', headers, payload: { apiId } })).json();
      const address = await a.listen({ host: '127.0.0.1', port: 0 });
      const res = await fetch(`${address}/v1/keys.verifyKey`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ key }),
      });
      assert.equal(((await res.json()) as { valid: boolean }).valid, true);
      const line = accessLines(log).at(-1)!;
      assert.deepEqual(
        { method: line.method, route: line.route, status: line.status, requestId: line.requestId },
        { method: 'POST', route: '/v1/keys.verifyKey', status: 200, requestId: res.headers.get('x-request-id') },
      );
      assert.equal(typeof line.ms, 'number');
      assert.equal(log.text().includes(key.slice(5)), false, 'the verified key is in no line');
    });

    test('off by default: no access line', async () => {
      const log = capturedLog();
      const a = await app({ logger: log.logger });
      await a.inject({ method: 'GET', url: '/v1/liveness' });
      assert.deepEqual(accessLines(log), []);
    });

    test('failed root-key authentications: 429 in the envelope for that address only, after the burst', async () => {
      const a = await app({ authFailureLimit: 3 });
      const call = (key: string, remoteAddress: string) =>
        a.inject({ method: 'GET', url: '/v1/apis.getApi?apiId=api_missing', headers: { authorization: `Bearer ${key}` }, remoteAddress });
      const wrong = 'kh_root_WrongWrongWrongWrongWrongWrong1';
      // Failures are counted in windows aligned to the minute: the burst and the limited call must fall in one.
      await windowWithRoom(60_000, 5_000);
      for (let i = 0; i < 3; i++) assert.equal((await call(wrong, '203.0.113.7')).statusCode, 401);
      const limited = await call(wrong, '203.0.113.7');
      assert.equal(limited.statusCode, 429);
      const body = limited.json();
      assert.equal(body.error.type, 'https://keyhold.dev/errors/limit/rate-limited');
      assert.equal(body.error.code, 'RATE_LIMITED');
      assert.equal(body.meta.requestId, limited.headers['x-request-id']);
      assert.ok(Number(limited.headers['retry-after']) >= 1 && Number(limited.headers['retry-after']) <= 60);
      assert.equal((await call(wrong, '203.0.113.8')).statusCode, 401, 'another address is unaffected');
      assert.equal((await call(root, '203.0.113.8')).statusCode, 404, 'and its valid key works');
      const metrics = (await a.inject({ method: 'GET', url: '/metrics' })).body;
      assert.match(metrics, /^keyhold_root_key_auth_failures_total 4$/m);
      assert.match(metrics, /^keyhold_root_key_auth_limited_total 1$/m);
      assert.match(metrics, /^keyhold_root_key_unknown_hits_total 3$/m);
    });
  });
}
