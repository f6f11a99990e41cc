import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../../../helpers/harness.ts';
import { securityTests } from '../../../helpers/security.ts';

for (const dialect of DIALECTS) {
  describe(`apis.createApi (${dialect})`, () => {
    let w: World;
    before(async () => {
      w = await world(dialect);
    });
    after(() => w.close());

    test('creates an API readable with getApi, and audits it', async () => {
      const res = await w.post<{ apiId: string }>('/v1/apis.createApi', { name: 'payments' });
      assert.equal(res.status, 200, res.body);
      assert.match(res.json.apiId, /^api_[1-9A-HJ-NP-Za-km-z]{22}$/);
      const got = await w.get('/v1/apis.getApi', { apiId: res.json.apiId });
      assert.deepEqual(got.json, { id: res.json.apiId, name: 'payments', workspaceId: w.workspaceId });
      const audit = await w.store.db.selectFrom('audit_logs').selectAll().where('target_id', '=', res.json.apiId).execute();
      assert.deepEqual(
        audit.map((a) => a.event),
        ['api.create'],
      );
      assert.equal(audit[0].actor_type, 'root_key');
      assert.equal(audit[0].request_id, res.headers['x-request-id']);
    });

    test('name shorter than 3, wrong type or missing → 400 listing the problem; nothing written', async () => {
      const before = await w.store.db
        .selectFrom('apis')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      for (const body of [{ name: 'ab' }, { name: 42 }, {}]) {
        const res = await w.post('/v1/apis.createApi', body);
        assert.equal(res.status, 400, res.body);
        assert.equal(res.json.error.code, 'BAD_REQUEST');
        assert.deepEqual(
          res.json.error.errors.map((e: { path: string }) => e.path),
          ['/name'],
        );
      }
      const after = await w.store.db
        .selectFrom('apis')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      assert.equal(Number(after.n), Number(before.n));
    });

    test('unknown members are ignored', async () => {
      const res = await w.post<{ apiId: string }>('/v1/apis.createApi', { name: 'with-extra', deleteProtection: true, whatever: 1 });
      assert.equal(res.status, 200, res.body);
      const row = await w.store.db.selectFrom('apis').selectAll().where('id', '=', res.json.apiId).executeTakeFirstOrThrow();
      assert.equal(row.delete_protection, 0);
    });

    test('a root key with api.*.create_api is enough', async () => {
      const res = await w.post('/v1/apis.createApi', { name: 'scoped' }, await w.rootKey(['api.*.create_api']));
      assert.equal(res.status, 200, res.body);
    });

    securityTests(() => w, {
      permission: 'api.*.create_api',
      request: async () => ({ method: 'POST', path: '/v1/apis.createApi', body: { name: 'secure' } }),
    });
  });
}
