import { deleteEndpoint } from '../../../services/webhooks/endpoints.ts';
import type { App, Deps } from '../../types.ts';
import { Body, requires, responses } from '../../schemas/common.ts';
import { Empty, EndpointId } from '../../schemas/webhooks.ts';

export default function webhooksDeleteEndpoint(app: App, deps: Deps) {
  app.post(
    '/v1/webhooks.deleteEndpoint',
    {
      schema: {
        ...requires('Delete a webhook endpoint and its deliveries for good', '`webhook.<endpointId>.delete_endpoint`'),
        body: Body({ endpointId: EndpointId }),
        response: responses(Empty),
      },
    },
    (req) => deleteEndpoint(deps.store.db, req.caller, req.body),
  );
}
