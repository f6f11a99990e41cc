import { updateEndpoint } from '../../../services/webhooks/endpoints.ts';
import type { App, Deps } from '../../types.ts';
import { Body, requires, responses } from '../../schemas/common.ts';
import { Empty, UpdateEndpointProps } from '../../schemas/webhooks.ts';

export default function webhooksUpdateEndpoint(app: App, deps: Deps) {
  app.post(
    '/v1/webhooks.updateEndpoint',
    {
      schema: {
        ...requires(
          'Update a webhook endpoint: absent members stay; `enabled: true` re-enables a disabled one',
          '`webhook.<endpointId>.update_endpoint`',
        ),
        body: Body(UpdateEndpointProps),
        response: responses(Empty),
      },
    },
    (req) => updateEndpoint({ db: deps.store.db, vault: deps.vault, settings: deps.webhooks }, req.caller, req.body),
  );
}
