import { Type } from '@sinclair/typebox';
import { listIdentities } from '../../../services/identities/identities.ts';
import type { App, Deps } from '../../types.ts';
import { requires, responses, CappedTotal } from '../../schemas/common.ts';
import { IdentityView } from '../../schemas/identities.ts';

export default function identitiesListIdentities(app: App, deps: Deps) {
  app.get(
    '/v1/identities.listIdentities',
    {
      schema: {
        ...requires('List the identities of one environment, by id, with cursor pagination', '`identity.*.read_identity`'),
        querystring: Type.Object({
          environment: Type.String({ minLength: 1, default: 'default' }),
          limit: Type.Integer({ minimum: 1, maximum: 100, default: 100 }),
          cursor: Type.Optional(Type.String({ minLength: 1 })),
        }),
        response: responses(
          Type.Object({
            identities: Type.Array(IdentityView),
            total: CappedTotal('Identities in the environment'),
            cursor: Type.Optional(Type.String({ description: 'Present when another page exists.' })),
          }),
        ),
      },
    },
    (req) => listIdentities(deps.store.db, req.caller, req.query),
  );
}
