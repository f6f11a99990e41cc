import { getIdentity } from '../../../services/identities/identities.ts';
import type { App, Deps } from '../../types.ts';
import { Body } from '../../schemas/common.ts';
import { ok, v2Requires, v2Responses } from '../envelope.ts';
import { IdentityRef, V2Identity, v2Identity } from '../identity-shapes.ts';

export default function v2IdentitiesGetIdentity(app: App, deps: Deps) {
  app.post(
    '/v2/identities.getIdentity',
    {
      schema: {
        ...v2Requires('Get an identity by id or externalId', '`identity.*.read_identity` or `identity.<identityId>.read_identity`'),
        body: Body({ identity: IdentityRef }),
        response: v2Responses(V2Identity),
      },
    },
    async (req) => ok(req.id, v2Identity(await getIdentity(deps.store.db, req.caller, { identity: req.body.identity }))),
  );
}
