import { Type } from '@sinclair/typebox';
import { sendTestEvent } from '../../../services/webhooks/deliveries.ts';
import type { App, Deps } from '../../types.ts';
import { Body, requires, responses } from '../../schemas/common.ts';
import { EndpointId } from '../../schemas/webhooks.ts';

export default function webhooksSendTestEvent(app: App, deps: Deps) {
  app.post(
    '/v1/webhooks.sendTestEvent',
    {
      schema: {
        ...requires('Send a `webhook.test` event to this endpoint alone', '`webhook.<endpointId>.update_endpoint`'),
        body: Body({ endpointId: EndpointId }),
        response: responses(Type.Object({ eventId: Type.String() })),
      },
    },
    (req) => sendTestEvent(deps.store.db, req.caller, req.body),
  );
}
