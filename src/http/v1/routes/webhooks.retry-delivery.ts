import { Type } from '@sinclair/typebox';
import { retryDelivery } from '../../../services/webhooks/deliveries.ts';
import type { App, Deps } from '../../types.ts';
import { Body, requires, responses } from '../../schemas/common.ts';
import { Empty } from '../../schemas/webhooks.ts';

export default function webhooksRetryDelivery(app: App, deps: Deps) {
  app.post(
    '/v1/webhooks.retryDelivery',
    {
      schema: {
        ...requires(
          'Attempt a delivery again, at once, with the same `webhook-id` (not one that was delivered)',
          '`webhook.<endpointId>.update_endpoint`',
        ),
        body: Body({ deliveryId: Type.String({ minLength: 1, maxLength: 100 }) }),
        response: responses(Empty),
      },
    },
    (req) => retryDelivery(deps.store.db, req.caller, req.body),
  );
}
