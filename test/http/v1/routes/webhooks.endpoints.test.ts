import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../../../helpers/harness.ts';
import type { Loose } from '../../../helpers/json.ts';
import { securityTests } from '../../../helpers/security.ts';
import { snapshot } from '../../../helpers/rows.ts';
import { EVENT_TYPES, MAX_WEBHOOK_ENDPOINTS } from '../../../../src/domain/webhook-events.ts';
import { createVault } from '../../../../src/crypto/vault.ts';

/** A public address given as a literal: creating an endpoint resolves nothing and sends nothing. */
const PUBLIC_URL = 'https://93.184.216.34/hooks/keyhold';
const TABLES = ['webhook_endpoints', 'webhook_events', 'webhook_deliveries', 'jobs', 'audit_logs'] as const;

interface EndpointView {
  endpointId: string;
  url: string;
  events: string[];
  description?: string;
  enabled: boolean;
  disabledReason?: string;
  creditsLowBelow: number;
  expiringWithinDays: number;
  createdAt: number;
  updatedAt: number;
}

async function create(w: World, body: Record<string, unknown> = {}, key = w.root): Promise<{ endpointId: string; secret: string }> {
  const r = await w.post<{ endpointId: string; secret: string }>('/v1/webhooks.createEndpoint', { url: PUBLIC_URL, ...body }, key);
  assert.equal(r.status, 200, r.body);
  return r.json;
}

async function endpoints(w: World, key = w.root): Promise<EndpointView[]> {
  const r = await w.get<Loose<{ endpoints: EndpointView[] }>>('/v1/webhooks.listEndpoints', {}, key);
  assert.equal(r.status, 200, r.body);
  return r.json.endpoints;
}

const badRequest = (r: { status: number; body: string; json: { error: { type: string } } }) => {
  assert.equal(r.status, 400, r.body);
  assert.equal(r.json.error.type, 'https://keyhold.dev/errors/request/invalid-body');
};

for (const dialect of DIALECTS) {
  describe(`webhooks endpoints (${dialect})`, () => {
    let w: World;
    before(async () => {
      w = await world(dialect);
    });
    after(() => w.close());

    test('createEndpoint: whep_ id and a whsec_ secret of 32 random bytes, stored only encrypted; defaults listed', async () => {
      const { endpointId, secret } = await create(w, { description: 'billing' });
      assert.match(endpointId, /^whep_/);
      assert.match(secret, /^whsec_[A-Za-z0-9+/]+=*$/);
      assert.equal(Buffer.from(secret.slice(6), 'base64').length, 32);
      const row = await w.store.db.selectFrom('webhook_endpoints').selectAll().where('id', '=', endpointId).executeTakeFirstOrThrow();
      assert.ok(!JSON.stringify(row).includes(secret.slice(6)), 'the secret is not stored in clear');
      const vault = createVault([{ id: 'test', key: Buffer.alloc(32, 7) }]);
      const [plain] = await vault.decrypt(w.store.db, w.workspaceId, [
        { dataKeyId: row.secret_data_key_id, ciphertext: row.secret_ciphertext },
      ]);
      assert.equal(plain, secret);
      const listed = (await endpoints(w)).find((e) => e.endpointId === endpointId)!;
      assert.deepEqual(
        { ...listed, createdAt: 0, updatedAt: 0 },
        {
          endpointId,
          url: PUBLIC_URL,
          events: [...EVENT_TYPES],
          description: 'billing',
          enabled: true,
          creditsLowBelow: 10,
          expiringWithinDays: 7,
          createdAt: 0,
          updatedAt: 0,
        },
      );
      assert.ok(!JSON.stringify(await endpoints(w)).includes('whsec_'));
      const audit = await w.store.db.selectFrom('audit_logs').selectAll().where('target_id', '=', endpointId).execute();
      assert.equal(audit.length, 1);
      assert.ok(!JSON.stringify(audit).includes(secret.slice(6)));
    });

    test('refused URLs (SSRF) and invalid members are a 400 that writes nothing', async () => {
      const before = await snapshot(w, TABLES);
      for (const url of [
        'http://93.184.216.34/hook',
        'https://127.0.0.1/hook',
        'https://10.0.0.1/hook',
        'https://169.254.169.254/latest/meta-data',
        'https://[::1]/hook',
        'https://[::ffff:127.0.0.1]/hook',
        'https://0.0.0.0/hook',
        'https://localhost/hook',
        'https://user:pw@93.184.216.34/hook',
        'not a url',
        'ftp://93.184.216.34/hook',
      ]) {
        const r = await w.post('/v1/webhooks.createEndpoint', { url });
        badRequest(r);
        assert.match(r.body, /\/url/, url);
      }
      for (const body of [
        { url: PUBLIC_URL, events: ['key.nope'] },
        { url: PUBLIC_URL, events: [] },
        { url: PUBLIC_URL, creditsLowBelow: 0 },
        { url: PUBLIC_URL, expiringWithinDays: 0 },
        { url: PUBLIC_URL, expiringWithinDays: 366 },
        { url: PUBLIC_URL, enabled: 'yes' },
        { url: 'https://x'.padEnd(3000, 'x') },
        {},
      ])
        badRequest(await w.post('/v1/webhooks.createEndpoint', body));
      assert.deepEqual(await snapshot(w, TABLES), before);
    });

    test('updateEndpoint: absent members stay; disabling names a reason and enabling clears it; SSRF checked again', async () => {
      const { endpointId } = await create(w, { events: ['key.created'], description: 'x' });
      const [before] = (await endpoints(w)).filter((e) => e.endpointId === endpointId);
      const r = await w.post('/v1/webhooks.updateEndpoint', {
        endpointId,
        enabled: false,
        events: ['key.deleted', 'key.deleted'],
        creditsLowBelow: 3,
      });
      assert.equal(r.status, 200, r.body);
      assert.deepEqual(r.json, {});
      const [after] = (await endpoints(w)).filter((e) => e.endpointId === endpointId);
      assert.deepEqual(after.events, ['key.deleted']);
      assert.equal(after.enabled, false);
      assert.equal(after.disabledReason, 'disabled by a user');
      assert.equal(after.creditsLowBelow, 3);
      assert.equal(after.description, 'x');
      assert.ok(after.updatedAt >= before.updatedAt);
      await w.post('/v1/webhooks.updateEndpoint', { endpointId, enabled: true, description: null });
      const [again] = (await endpoints(w)).filter((e) => e.endpointId === endpointId);
      assert.equal(again.enabled, true);
      assert.equal(again.disabledReason, undefined);
      assert.equal(again.description, undefined);
      badRequest(await w.post('/v1/webhooks.updateEndpoint', { endpointId, url: 'https://192.168.1.1/x' }));
      assert.equal((await w.post('/v1/webhooks.updateEndpoint', { endpointId: 'whep_nope', enabled: true })).status, 404);
    });

    test('rotateSecret: a new secret, the previous one kept for 24 h; deleteEndpoint removes it and its deliveries', async () => {
      const { endpointId, secret } = await create(w);
      const t0 = Date.now();
      const r = await w.post<{ secret: string }>('/v1/webhooks.rotateSecret', { endpointId });
      assert.equal(r.status, 200, r.body);
      assert.match(r.json.secret, /^whsec_/);
      assert.notEqual(r.json.secret, secret);
      const row = await w.store.db.selectFrom('webhook_endpoints').selectAll().where('id', '=', endpointId).executeTakeFirstOrThrow();
      assert.ok(Number(row.previous_secret_until) >= t0 + 24 * 3_600_000);
      assert.equal((await w.post('/v1/webhooks.sendTestEvent', { endpointId })).status, 200);
      const del = await w.post('/v1/webhooks.deleteEndpoint', { endpointId });
      assert.equal(del.status, 200, del.body);
      assert.equal((await w.post('/v1/webhooks.deleteEndpoint', { endpointId })).status, 404);
      assert.equal((await w.get('/v1/webhooks.listDeliveries', { endpointId })).status, 404);
      const left = await w.store.db.selectFrom('webhook_deliveries').select('id').where('endpoint_id', '=', endpointId).execute();
      assert.deepEqual(left, []);
    });

    test('sendTestEvent: an evt_ event with one pending delivery and its job; listDeliveries and retryDelivery', async () => {
      const { endpointId } = await create(w, { events: ['key.created'] });
      const r = await w.post<{ eventId: string }>('/v1/webhooks.sendTestEvent', { endpointId });
      assert.equal(r.status, 200, r.body);
      assert.match(r.json.eventId, /^evt_/);
      const event = await w.store.db.selectFrom('webhook_events').selectAll().where('id', '=', r.json.eventId).executeTakeFirstOrThrow();
      const body = JSON.parse(event.body);
      assert.equal(body.type, 'webhook.test');
      assert.deepEqual(body.data, { endpointId });
      assert.ok(!Number.isNaN(Date.parse(body.timestamp)));
      const list = await w.get<Loose<{ deliveries: Array<Record<string, unknown>>; cursor?: string }>>('/v1/webhooks.listDeliveries', {
        endpointId,
      });
      assert.equal(list.status, 200, list.body);
      assert.equal(list.json.deliveries.length, 1);
      const d = list.json.deliveries[0];
      assert.equal(d.eventId, r.json.eventId);
      assert.equal(d.type, 'webhook.test');
      assert.equal(d.status, 'pending');
      assert.equal(d.attempts, 0);
      const jobs = await w.store.db.selectFrom('jobs').selectAll().where('task', '=', 'webhook.deliver').execute();
      assert.ok(jobs.some((j) => JSON.parse(j.payload).deliveryId === d.deliveryId));
      // Newest first, paginated, filtered by status.
      await w.post('/v1/webhooks.sendTestEvent', { endpointId });
      const page = await w.get<Loose<{ deliveries: Array<{ deliveryId: string }>; cursor?: string }>>('/v1/webhooks.listDeliveries', {
        endpointId,
        limit: 1,
      });
      assert.equal(page.json.deliveries.length, 1);
      assert.ok(page.json.cursor);
      assert.notEqual(page.json.deliveries[0].deliveryId, d.deliveryId);
      const next = await w.get<Loose<{ deliveries: Array<{ deliveryId: string }>; cursor?: string }>>('/v1/webhooks.listDeliveries', {
        endpointId,
        limit: 1,
        cursor: page.json.cursor!,
      });
      assert.equal(next.json.deliveries[0].deliveryId, d.deliveryId);
      assert.equal(next.json.cursor, undefined);
      const delivered = await w.get<Loose<{ deliveries: unknown[] }>>('/v1/webhooks.listDeliveries', { endpointId, status: 'delivered' });
      assert.deepEqual(delivered.json.deliveries, []);
      badRequest(await w.get('/v1/webhooks.listDeliveries', { endpointId, status: 'lost' }));
      // retryDelivery: a failed one goes back to pending; a delivered one is a 412; an unknown one a 404.
      await w.store.db.updateTable('webhook_deliveries').set({ status: 'failed' }).where('id', '=', String(d.deliveryId)).execute();
      assert.equal((await w.post('/v1/webhooks.retryDelivery', { deliveryId: d.deliveryId })).status, 200);
      const row = await w.store.db
        .selectFrom('webhook_deliveries')
        .selectAll()
        .where('id', '=', String(d.deliveryId))
        .executeTakeFirstOrThrow();
      assert.equal(row.status, 'pending');
      await w.store.db.updateTable('webhook_deliveries').set({ status: 'delivered' }).where('id', '=', String(d.deliveryId)).execute();
      assert.equal((await w.post('/v1/webhooks.retryDelivery', { deliveryId: d.deliveryId })).status, 412);
      assert.equal((await w.post('/v1/webhooks.retryDelivery', { deliveryId: 'whdl_nope' })).status, 404);
    });

    test('per-endpoint permissions: a key for one endpoint lists and changes only that one', async () => {
      const a = await create(w);
      const b = await create(w);
      const key = await w.rootKey([`webhook.${a.endpointId}.read_endpoint`, `webhook.${a.endpointId}.update_endpoint`]);
      assert.deepEqual(
        (await endpoints(w, key)).map((e) => e.endpointId),
        [a.endpointId],
      );
      assert.equal((await w.post('/v1/webhooks.sendTestEvent', { endpointId: a.endpointId }, key)).status, 200);
      const denied = await w.post('/v1/webhooks.sendTestEvent', { endpointId: b.endpointId }, key);
      assert.equal(denied.status, 403);
      assert.match(denied.json.error.detail, new RegExp(`webhook\\.${b.endpointId}\\.update_endpoint`));
      assert.equal((await w.post('/v1/webhooks.createEndpoint', { url: PUBLIC_URL }, key)).status, 403);
    });

    test(`at most ${MAX_WEBHOOK_ENDPOINTS} endpoints per workspace (412)`, async () => {
      const other = await w.otherWorkspace();
      for (let i = 0; i < MAX_WEBHOOK_ENDPOINTS; i++) await create(w, {}, other.root);
      const r = await w.post('/v1/webhooks.createEndpoint', { url: PUBLIC_URL }, other.root);
      assert.equal(r.status, 412, r.body);
    });

    // One endpoint and one delivery per workspace serve every security case (the workspace bound stays far).
    const made = new Map<string, string>();
    const endpointOf = async (wd: World, key: string) => {
      if (!made.has(key)) made.set(key, (await create(wd, {}, key)).endpointId);
      return made.get(key)!;
    };
    const deliveryOf = async (wd: World, key: string) => {
      if (made.has(`d:${key}`)) return made.get(`d:${key}`)!;
      const endpointId = await endpointOf(wd, key);
      const r = await wd.post<{ eventId: string }>('/v1/webhooks.sendTestEvent', { endpointId }, key);
      const row = await wd.store.db
        .selectFrom('webhook_deliveries')
        .select('id')
        .where('event_id', '=', r.json.eventId)
        .executeTakeFirstOrThrow();
      await wd.store.db.updateTable('webhook_deliveries').set({ status: 'failed' }).where('id', '=', row.id).execute();
      made.set(`d:${key}`, row.id);
      return row.id;
    };
    describe('createEndpoint security', () =>
      securityTests(() => w, {
        permission: 'webhook.*.create_endpoint',
        request: async () => ({ method: 'POST', path: '/v1/webhooks.createEndpoint', body: { url: PUBLIC_URL } }),
      }));
    describe('listEndpoints security', () =>
      securityTests(() => w, {
        permission: 'webhook.*.read_endpoint',
        request: async () => ({ method: 'GET', path: '/v1/webhooks.listEndpoints' }),
      }));
    for (const [path, action] of [
      ['/v1/webhooks.updateEndpoint', 'update_endpoint'],
      ['/v1/webhooks.deleteEndpoint', 'delete_endpoint'],
      ['/v1/webhooks.rotateSecret', 'update_endpoint'],
      ['/v1/webhooks.sendTestEvent', 'update_endpoint'],
      ['/v1/webhooks.listDeliveries', 'read_endpoint'],
    ] as const) {
      describe(`${path} security`, () =>
        securityTests(() => w, {
          permission: action,
          request: async (wd) => {
            const endpointId = await endpointOf(wd, wd.root);
            return path.endsWith('listDeliveries')
              ? { method: 'GET', path, query: { endpointId } }
              : { method: 'POST', path, body: { endpointId, ...(path.endsWith('updateEndpoint') ? { enabled: true } : {}) } };
          },
          foreign: async (wd, other) => {
            const endpointId = await endpointOf(wd, other.root);
            return path.endsWith('listDeliveries')
              ? { method: 'GET', path, query: { endpointId } }
              : { method: 'POST', path, body: { endpointId, ...(path.endsWith('updateEndpoint') ? { enabled: true } : {}) } };
          },
        }));
    }
    describe('retryDelivery security', () =>
      securityTests(() => w, {
        permission: 'update_endpoint',
        request: async (wd) => ({
          method: 'POST',
          path: '/v1/webhooks.retryDelivery',
          body: { deliveryId: await deliveryOf(wd, wd.root) },
        }),
        foreign: async (wd, other) => ({
          method: 'POST',
          path: '/v1/webhooks.retryDelivery',
          body: { deliveryId: await deliveryOf(wd, other.root) },
        }),
      }));
  });
}
