import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, OPERATOR, freshStore } from '../helpers/harness.ts';
import { runCli } from '../helpers/cli.ts';
import type { CliAnswer } from '../helpers/json.ts';
import type { Store } from '../../src/store/store.ts';
import { createWorkspace } from '../../src/services/workspaces/workspaces.ts';
import { operatorCaller } from '../../src/services/caller.ts';
import { createVault } from '../../src/crypto/vault.ts';
import { createEndpoint } from '../../src/services/webhooks/endpoints.ts';
import { sendTestEvent } from '../../src/services/webhooks/deliveries.ts';
import { DEFAULT_WEBHOOK_SETTINGS } from '../../src/config/webhooks.ts';

type Endpoints = { endpoints: Array<{ endpointId: string; url: string; enabled: boolean }> };
type Deliveries = {
  deliveries: Array<{ deliveryId: string; eventId: string; type: string; status: string; attempts: number }>;
  cursor?: string;
};

for (const dialect of DIALECTS) {
  describe(`keyhold webhooks (${dialect})`, () => {
    let store: Store;
    let url: string;
    let close: () => Promise<void>;
    let ws: string;
    let endpointId: string;
    let eventId: string;
    before(async () => {
      ({ store, url, close } = await freshStore(dialect));
      ws = (await createWorkspace(store.db, 'acme', OPERATOR)).workspaceId;
      const caller = operatorCaller(ws, OPERATOR, 'req_test');
      const vault = createVault([{ id: 'test', key: Buffer.alloc(32, 7) }]);
      const ctx = { db: store.db, vault, settings: DEFAULT_WEBHOOK_SETTINGS };
      ({ endpointId } = await createEndpoint(ctx, caller, { url: 'https://93.184.216.34/hooks' }));
      ({ eventId } = await sendTestEvent(store.db, caller, { endpointId }));
    });
    after(() => close());
    const cli = <T = CliAnswer>(...argv: string[]) => runCli<T>({ DATABASE_URL: url }, argv);

    test('list: the endpoints of the workspace, never a secret', async () => {
      const r = await cli<Endpoints>('webhooks', 'list', '--workspace', ws, '--json');
      assert.equal(r.code, 0, JSON.stringify(r));
      assert.deepEqual(
        r.json.endpoints.map((e) => [e.endpointId, e.url, e.enabled]),
        [[endpointId, 'https://93.184.216.34/hooks', true]],
      );
      assert.ok(!JSON.stringify(r).includes('whsec_'));
      const text = await cli('webhooks', 'list', '--workspace', ws);
      assert.match(text.out.join(''), new RegExp(`${endpointId}  enabled  https://93.184.216.34/hooks`));
      assert.notEqual((await cli('webhooks', 'list', '--workspace', 'ws_nope')).code, 0);
    });

    test('deliveries: by endpoint, newest first, filtered by status', async () => {
      const r = await cli<Deliveries>('webhooks', 'deliveries', '--endpoint', endpointId, '--json');
      assert.equal(r.code, 0, JSON.stringify(r));
      assert.deepEqual(
        r.json.deliveries.map((d) => [d.eventId, d.type, d.status, d.attempts]),
        [[eventId, 'webhook.test', 'pending', 0]],
      );
      const none = await cli<Deliveries>('webhooks', 'deliveries', '--endpoint', endpointId, '--status', 'delivered', '--json');
      assert.deepEqual(none.json.deliveries, []);
      assert.notEqual((await cli('webhooks', 'deliveries', '--endpoint', endpointId, '--status', 'lost')).code, 0);
      assert.notEqual((await cli('webhooks', 'deliveries', '--endpoint', 'whep_nope')).code, 0);
    });
  });
}
