import { newId } from '../../domain/ids.ts';
import { operatorCaller } from '../../services/caller.ts';
import { requireWorkspace } from '../../services/lookups.ts';
import { listDeliveries, type DeliveryStatus } from '../../services/webhooks/deliveries.ts';
import { workspaceOfEndpoint } from '../../services/webhooks/endpoint-records.ts';
import { listEndpoints } from '../../services/webhooks/endpoints.ts';
import { type CommandGroup, UsageError, integerOption, requiredOption, stringOption } from '../command.ts';

const STATUSES: readonly DeliveryStatus[] = ['pending', 'delivered', 'failed'];
const iso = (ms: number | undefined) => (ms === undefined ? '-' : new Date(ms).toISOString());

/** `keyhold webhooks …`: a workspace's webhook endpoints and their deliveries (docs/webhooks.md). */
export const WEBHOOK_COMMANDS: CommandGroup = {
  'webhooks list': {
    summary: "Lists a workspace's webhook endpoints (never their secrets).",
    options: { workspace: { type: 'string', required: true, value: 'W', description: 'the workspace (ws_…)' } },
    prints: '{"endpoints":[{"endpointId","url","events","enabled","disabledReason"?,…}…]}',
    async run({ store, actor }, values) {
      const workspaceId = requiredOption(values, 'workspace');
      await requireWorkspace(store.db, workspaceId);
      const r = await listEndpoints(store.db, operatorCaller(workspaceId, actor, newId('req')));
      const lines = r.endpoints.map(
        (e) =>
          `${e.endpointId}  ${e.enabled ? 'enabled' : `disabled (${e.disabledReason ?? 'by a user'})`}  ${e.url}  ${e.events.length} event type(s)`,
      );
      return { json: r, text: lines.join('\n') || 'no endpoints' };
    },
  },
  'webhooks deliveries': {
    summary: "Lists an endpoint's deliveries, newest first.",
    options: {
      endpoint: { type: 'string', required: true, value: 'E', description: 'the endpoint (whep_…)' },
      status: { type: 'string', value: 'S', description: 'only pending, delivered or failed ones' },
      limit: { type: 'string', value: 'N', description: 'at most N deliveries (1..100, default 100)' },
      cursor: { type: 'string', value: 'C', description: 'the cursor printed with the previous page' },
    },
    prints: '{"deliveries":[{"deliveryId","eventId","type","status","attempts","lastStatusCode"?,"nextAttemptAt"?,…}…],"cursor"?}',
    async run({ store, actor }, values) {
      const endpointId = requiredOption(values, 'endpoint');
      const status = stringOption(values, 'status') as DeliveryStatus | undefined;
      if (status !== undefined && !STATUSES.includes(status)) throw new UsageError(`--status must be one of ${STATUSES.join(', ')}`);
      const caller = operatorCaller(await workspaceOfEndpoint(store.db, endpointId), actor, newId('req'));
      const query = { endpointId, status, limit: integerOption(values, 'limit', 100, 1, 100), cursor: stringOption(values, 'cursor') };
      const r = await listDeliveries(store.db, caller, query);
      const lines = r.deliveries.map(
        (d) =>
          `${d.deliveryId}  ${d.eventId}  ${d.type}  ${d.status}  ${d.attempts} attempt(s)  last ${d.lastStatusCode ?? '-'}  next ${iso(d.nextAttemptAt)}`,
      );
      return { json: r, text: `${lines.join('\n') || 'no deliveries'}${r.cursor ? `\nmore: --cursor ${r.cursor}` : ''}` };
    },
  },
};
