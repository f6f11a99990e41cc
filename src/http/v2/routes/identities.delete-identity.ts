import { Type } from '@sinclair/typebox';
import { deleteIdentity } from '../../../services/identities/identities.ts';
import type { App, Deps } from '../../types.ts';
import { Body } from '../../schemas/common.ts';
import { v2Requires, v2Responses } from '../envelope.ts';
import { IdentityRef } from '../identity-shapes.ts';

export default function v2IdentitiesDeleteIdentity(app: App, deps: Deps) {
  app.post(
    '/v2/identities.deleteIdentity',
    {
      schema: {
        ...v2Requires(
          'Delete an identity and its rate limits; its keys stay, unlinked',
          '`identity.*.delete_identity` or `identity.<identityId>.delete_identity`',
        ),
        body: Body({ identity: IdentityRef }),
        // v2 answers this one operation with `meta` alone, no `data`.
        response: { ...v2Responses(Type.Object({})), 200: Type.Object({ meta: Type.Object({ requestId: Type.String() }) }) },
      },
    },
    async (req) => {
      await deleteIdentity(deps.store.db, req.caller, { identity: req.body.identity });
      return { meta: { requestId: req.id } };
    },
  );
}
