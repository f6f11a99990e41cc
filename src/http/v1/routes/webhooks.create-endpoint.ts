import { Type } from '@sinclair/typebox';
import { createEndpoint } from '../../../services/webhooks/endpoints.ts';
import type { App, Deps } from '../../types.ts';
import { Body, requires, responses } from '../../schemas/common.ts';
import { EndpointProps } from '../../schemas/webhooks.ts';

export default function webhooksCreateEndpoint(app: App, deps: Deps) {
  app.post(
    '/v1/webhooks.createEndpoint',
    {
      schema: {
        ...requires('Create a webhook endpoint; its signing secret is returned here once', '`webhook.*.create_endpoint`'),
        body: Body(EndpointProps),
        response: responses(Type.Object({ endpointId: Type.String(), secret: Type.String({ description: '`whsec_…`, shown once.' }) })),
      },
    },
    (req) => createEndpoint({ db: deps.store.db, vault: deps.vault, settings: deps.webhooks }, req.caller, req.body),
  );
}
