import { Type } from '@sinclair/typebox';
import { getApi } from '../../../services/apis/apis.ts';
import type { App, Deps } from '../../types.ts';
import { requires, responses } from '../../schemas/common.ts';

export default function apisGetApi(app: App, deps: Deps) {
  app.get(
    '/v1/apis.getApi',
    {
      schema: {
        ...requires('Get an API', '`api.<apiId>.read_api`'),
        querystring: Type.Object({ apiId: Type.String({ minLength: 1 }) }),
        response: responses(Type.Object({ id: Type.String(), name: Type.String(), workspaceId: Type.String() })),
      },
    },
    (req) => getApi(deps.store.db, req.caller, req.query.apiId),
  );
}
