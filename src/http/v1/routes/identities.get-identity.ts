import { Type } from '@sinclair/typebox';
import { getIdentity } from '../../../services/identities/identities.ts';
import type { App, Deps } from '../../types.ts';
import { requires, responses } from '../../schemas/common.ts';
import { IdentityView } from '../../schemas/identities.ts';

export default function identitiesGetIdentity(app: App, deps: Deps) {
  app.get(
    '/v1/identities.getIdentity',
    {
      schema: {
        ...requires('Get an identity by identityId or externalId', '`identity.<identityId>.read_identity`'),
        querystring: Type.Object({
          identityId: Type.Optional(Type.String({ minLength: 1 })),
          externalId: Type.Optional(Type.String({ minLength: 1, description: 'Used when identityId is absent.' })),
        }),
        response: responses(IdentityView),
      },
    },
    (req) => getIdentity(deps.store.db, req.caller, req.query),
  );
}
