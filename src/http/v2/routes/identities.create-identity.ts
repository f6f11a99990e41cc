import { Type } from '@sinclair/typebox';
import { createIdentity } from '../../../services/identities/identities.ts';
import type { App, Deps } from '../../types.ts';
import { Body, Meta } from '../../schemas/common.ts';
import { ok, v2Requires, v2Responses } from '../envelope.ts';
import { V2RatelimitRequests } from '../identity-shapes.ts';

export default function v2IdentitiesCreateIdentity(app: App, deps: Deps) {
  app.post(
    '/v2/identities.createIdentity',
    {
      schema: {
        ...v2Requires('Create an identity (one of your users); its keys share its rate limits', '`identity.*.create_identity`'),
        body: Body({
          externalId: Type.String({ minLength: 1, maxLength: 255, pattern: '^[a-zA-Z0-9_.-]+$' }),
          meta: Type.Optional(Meta),
          ratelimits: Type.Optional(V2RatelimitRequests),
        }),
        response: v2Responses(Type.Object({ identityId: Type.String() })),
      },
    },
    async (req) => {
      const { identityId } = await createIdentity(deps.store.db, req.caller, req.body);
      return ok(req.id, { identityId });
    },
  );
}
