import { Type } from '@sinclair/typebox';
import { listEndpoints } from '../../../services/webhooks/endpoints.ts';
import type { App, Deps } from '../../types.ts';
import { requires, responses } from '../../schemas/common.ts';
import { Endpoint } from '../../schemas/webhooks.ts';

export default function webhooksListEndpoints(app: App, deps: Deps) {
  app.get(
    '/v1/webhooks.listEndpoints',
    {
      schema: {
        ...requires('List the webhook endpoints of the workspace (never their secrets)', '`webhook.<endpointId>.read_endpoint`'),
        response: responses(Type.Object({ endpoints: Type.Array(Endpoint) })),
      },
    },
    (req) => listEndpoints(deps.store.db, req.caller),
  );
}
