import { Type } from '@sinclair/typebox';
import { createIdentity } from '../../../services/identities/identities.ts';
import type { App, Deps } from '../../types.ts';
import { Body, Meta, requires, responses } from '../../schemas/common.ts';
import { IdentityRatelimits } from '../../schemas/identities.ts';

export default function identitiesCreateIdentity(app: App, deps: Deps) {
  app.post(
    '/v1/identities.createIdentity',
    {
      schema: {
        ...requires('Create an identity (one of your users); its keys share its rate limits', '`identity.*.create_identity`'),
        body: Body({
          externalId: Type.String({ minLength: 1, maxLength: 256 }),
          environment: Type.Optional(Type.String({ minLength: 1, maxLength: 256, default: 'default' })),
          meta: Type.Optional(Meta),
          ratelimits: Type.Optional(IdentityRatelimits),
        }),
        response: responses(Type.Object({ identityId: Type.String() })),
      },
    },
    (req) => createIdentity(deps.store.db, req.caller, req.body),
  );
}
