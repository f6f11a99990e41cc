import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../../helpers/harness.ts';
import { deliveringWorld, type DeliveringWorld } from '../../helpers/webhook-world.ts';
import { sweepExpiries } from '../../../src/services/webhooks/expiry-sweep.ts';
import { until, verifiedPayloads } from '../../helpers/webhook-receiver.ts';

const DAY = 86_400_000;

/** key.expiring once per key and endpoint within its expiringWithinDays; key.expired once per key; across servers (their own `reported`). */
for (const dialect of DIALECTS) {
  describe(`key.expiring and key.expired (${dialect})`, () => {
    let w: World;
    before(async () => {
      w = await world(dialect);
    });
    after(() => w.close());

    const events = async (type: string) =>
      (await w.store.db.selectFrom('webhook_events').select(['body']).where('type', '=', type).execute()).map(
        (e) => JSON.parse(e.body).data,
      );

    test('each once, to the endpoints whose window the key is in; deleted and far keys are left alone', async () => {
      const apiId = await w.createApi('expiry');
      const url = 'https://93.184.216.34/hook';
      const week = (await w.post<{ endpointId: string }>('/v1/webhooks.createEndpoint', { url, events: ['key.expiring', 'key.expired'] }))
        .json.endpointId;
      const month = (
        await w.post<{ endpointId: string }>('/v1/webhooks.createEndpoint', { url, events: ['key.expiring'], expiringWithinDays: 30 })
      ).json.endpointId;
      const now = Date.now();
      const soon = await w.createKey({ apiId, expires: now + 3 * DAY });
      const later = await w.createKey({ apiId, expires: now + 20 * DAY });
      const far = await w.createKey({ apiId, expires: now + 60 * DAY });
      const gone = await w.createKey({ apiId, expires: now + 2 * DAY });
      await w.post('/v1/keys.deleteKey', { keyId: gone.keyId });
      const expired = await w.createKey({ apiId, expires: now + 1000 });

      // soon and expired (in 1 s) → both endpoints, later → month
      assert.equal(await sweepExpiries(w.store.db, new Set(), now), 5);
      assert.equal(await sweepExpiries(w.store.db, new Set(), now), 0, 'another server sweeping finds them written');
      const expiring = await events('key.expiring');
      assert.deepEqual(expiring.map((d) => d.keyId).sort(), [soon.keyId, soon.keyId, later.keyId, expired.keyId, expired.keyId].sort());
      assert.ok(!expiring.some((d) => d.keyId === far.keyId || d.keyId === gone.keyId));
      const deliveries = await w.store.db
        .selectFrom('webhook_deliveries')
        .select(['endpoint_id', 'type'])
        .where('type', '=', 'key.expiring')
        .execute();
      assert.deepEqual(deliveries.map((d) => d.endpoint_id).sort(), [week, month, month, week, month].sort());

      const reported = new Set<string>();
      assert.equal(await sweepExpiries(w.store.db, reported, now + 2000), 1);
      assert.equal(await sweepExpiries(w.store.db, reported, now + 3000), 0);
      assert.deepEqual(await events('key.expired'), [{ keyId: expired.keyId, apiId, expires: now + 1000 }]);
    });

    test('a narrow sweep finds the keys whose moment came since the last one, and no other', async () => {
      const { workspaceId, root } = await w.otherWorkspace();
      const apiId = await w.createApi('narrow', root);
      const url = 'https://93.184.216.34/hook';
      const created = await w.post<{ endpointId: string }>(
        '/v1/webhooks.createEndpoint',
        { url, events: ['key.expiring', 'key.expired'], expiringWithinDays: 2 },
        root,
      );
      assert.equal(created.status, 200, created.body);
      const t = Date.now();
      const crossing = await w.createKey({ apiId, expires: t + 2 * DAY + 500 }, root); // within 2 days from t + 500 ms
      const expiring = await w.createKey({ apiId, expires: t + 800 }, root); // expires at t + 800 ms
      const inside = await w.createKey({ apiId, expires: t + DAY }, root); // inside the window already: full sweeps only
      const ofWorkspace = async (type: string) =>
        (
          await w.store.db
            .selectFrom('webhook_events')
            .select(['body'])
            .where('workspace_id', '=', workspaceId)
            .where('type', '=', type)
            .execute()
        )
          .map((e) => JSON.parse(e.body).data.keyId)
          .sort();
      const reported = new Set<string>();
      assert.equal(await sweepExpiries(w.store.db, reported, t + 400, t), 0, 'nothing came in (t, t + 400]');
      assert.equal(await sweepExpiries(w.store.db, reported, t + 1000, t + 400), 2);
      assert.deepEqual(await ofWorkspace('key.expiring'), [crossing.keyId]);
      assert.deepEqual(await ofWorkspace('key.expired'), [expiring.keyId]);
      assert.equal(await sweepExpiries(w.store.db, reported, t + 2000), 1, 'a full sweep adds the key already inside its window');
      assert.deepEqual(await ofWorkspace('key.expiring'), [crossing.keyId, inside.keyId].sort());
    });
  });
}

/** Through a server: its own sweeps (every second) deliver key.expired within 2 s of the expiry. */
for (const dialect of DIALECTS) {
  describe(`key.expired through a server (${dialect})`, () => {
    let delivering: DeliveringWorld;
    before(async () => {
      delivering = await deliveringWorld(dialect, { events: ['key.expired'] });
    });
    after(() => delivering?.close());

    test('a key expiring in 1 s is reported within 2 s of its expiry', async () => {
      const { w, rx, secret } = delivering;
      const apiId = await w.createApi('expires');
      const expires = Date.now() + 1000;
      const { keyId } = await w.createKey({ apiId, expires });
      await until('key.expired', () => rx.got.length > 0, expires + 2000 - Date.now());
      const [event] = verifiedPayloads(rx.got, secret);
      assert.equal(event.type, 'key.expired');
      assert.deepEqual(event.data, { keyId, apiId, expires });
    });
  });
}
