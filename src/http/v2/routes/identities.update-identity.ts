import { Type } from '@sinclair/typebox';
import { updateIdentity } from '../../../services/identities/identities.ts';
import type { App, Deps } from '../../types.ts';
import { Body, Meta } from '../../schemas/common.ts';
import { ok, v2Requires, v2Responses } from '../envelope.ts';
import { IdentityRef, V2Identity, V2RatelimitRequests, v2Identity } from '../identity-shapes.ts';

export default function v2IdentitiesUpdateIdentity(app: App, deps: Deps) {
  app.post(
    '/v2/identities.updateIdentity',
    {
      schema: {
        ...v2Requires(
          "Update an identity's meta (replaced; `{}` clears it) and its rate limits (the whole set, by name)",
          '`identity.*.update_identity` or `identity.<identityId>.update_identity`',
        ),
        body: Body({
          identity: IdentityRef,
          meta: Type.Optional(Meta),
          ratelimits: Type.Optional(V2RatelimitRequests),
        }),
        response: v2Responses(V2Identity),
      },
    },
    async (req) => ok(req.id, v2Identity(await updateIdentity(deps.store.db, req.caller, req.body))),
  );
}
