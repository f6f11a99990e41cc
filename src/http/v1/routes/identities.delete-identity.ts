import { Type } from '@sinclair/typebox';
import { deleteIdentity } from '../../../services/identities/identities.ts';
import type { App, Deps } from '../../types.ts';
import { Body, requires, responses } from '../../schemas/common.ts';

export default function identitiesDeleteIdentity(app: App, deps: Deps) {
  app.post(
    '/v1/identities.deleteIdentity',
    {
      schema: {
        ...requires('Delete an identity and its rate limits; its keys stay, unlinked', '`identity.<identityId>.delete_identity`'),
        body: Body({ identityId: Type.String({ minLength: 1 }) }),
        response: responses(Type.Object({})),
      },
    },
    async (req) => {
      await deleteIdentity(deps.store.db, req.caller, req.body.identityId);
      return {};
    },
  );
}
