import { Type } from '@sinclair/typebox';
import { listDeliveries } from '../../../services/webhooks/deliveries.ts';
import type { App, Deps } from '../../types.ts';
import { OneOf, PageQuery, requires, responses } from '../../schemas/common.ts';
import { DELIVERY_STATUSES, Delivery, EndpointId } from '../../schemas/webhooks.ts';

export default function webhooksListDeliveries(app: App, deps: Deps) {
  app.get(
    '/v1/webhooks.listDeliveries',
    {
      schema: {
        ...requires("List an endpoint's deliveries, newest first, with cursor pagination", '`webhook.<endpointId>.read_endpoint`'),
        querystring: Type.Composite([PageQuery, Type.Object({ endpointId: EndpointId, status: Type.Optional(OneOf(DELIVERY_STATUSES)) })]),
        response: responses(
          Type.Object({
            deliveries: Type.Array(Delivery),
            cursor: Type.Optional(Type.String({ description: 'Present when another page exists.' })),
          }),
        ),
      },
    },
    (req) => listDeliveries(deps.store.db, req.caller, req.query),
  );
}
