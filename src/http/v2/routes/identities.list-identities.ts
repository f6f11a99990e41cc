import { Type } from '@sinclair/typebox';
import { listIdentities } from '../../../services/identities/identities.ts';
import type { App, Deps } from '../../types.ts';
import { Body } from '../../schemas/common.ts';
import { paged, v2PageResponses, v2Requires } from '../envelope.ts';
import { V2Identity, v2Identity } from '../identity-shapes.ts';
import { PageBody } from '../schemas.ts';

export default function v2IdentitiesListIdentities(app: App, deps: Deps) {
  app.post(
    '/v2/identities.listIdentities',
    {
      schema: {
        ...v2Requires('List the identities of the workspace, by id', '`identity.*.read_identity`'),
        body: Body({
          ...PageBody,
          search: Type.Optional(
            Type.String({ maxLength: 256, description: 'Only identities whose id or externalId contains it (ignoring case).' }),
          ),
        }),
        response: v2PageResponses(V2Identity),
      },
    },
    async (req) => {
      const { limit = 100, cursor, search } = req.body;
      const page = await listIdentities(deps.store.db, req.caller, { limit, cursor, search: search?.trim(), withTotal: false });
      return paged(req.id, page.identities.map(v2Identity), page.cursor);
    },
  );
}
