import { Type } from '@sinclair/typebox';
import { rotateSecret } from '../../../services/webhooks/endpoints.ts';
import type { App, Deps } from '../../types.ts';
import { Body, requires, responses } from '../../schemas/common.ts';
import { EndpointId } from '../../schemas/webhooks.ts';

export default function webhooksRotateSecret(app: App, deps: Deps) {
  app.post(
    '/v1/webhooks.rotateSecret',
    {
      schema: {
        ...requires(
          'Replace the signing secret of an endpoint, returned once; for 24 h deliveries carry signatures by both secrets',
          '`webhook.<endpointId>.update_endpoint`',
        ),
        body: Body({ endpointId: EndpointId }),
        response: responses(Type.Object({ secret: Type.String() })),
      },
    },
    (req) => rotateSecret({ db: deps.store.db, vault: deps.vault, settings: deps.webhooks }, req.caller, req.body),
  );
}
