import { Type } from '@sinclair/typebox';
import { updateIdentity } from '../../../services/identities/identities.ts';
import type { App, Deps } from '../../types.ts';
import { Body, Meta, requires, responses } from '../../schemas/common.ts';
import { IdentityRatelimits, IdentityView } from '../../schemas/identities.ts';

export default function identitiesUpdateIdentity(app: App, deps: Deps) {
  app.post(
    '/v1/identities.updateIdentity',
    {
      schema: {
        ...requires("Update an identity's meta and replace its rate limits", '`identity.<identityId>.update_identity`'),
        body: Body({
          identityId: Type.Optional(Type.String({ minLength: 1 })),
          externalId: Type.Optional(Type.String({ minLength: 1, description: 'Used when identityId is absent.' })),
          meta: Type.Optional(Meta),
          ratelimits: Type.Optional(IdentityRatelimits),
        }),
        response: responses(IdentityView),
      },
    },
    (req) => updateIdentity(deps.store.db, req.caller, req.body),
  );
}
