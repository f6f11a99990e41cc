import { Type } from '@sinclair/typebox';
import { getApi } from '../../../services/apis/apis.ts';
import type { App, Deps } from '../../types.ts';
import { Body } from '../../schemas/common.ts';
import { ok, v2Requires, v2Responses } from '../envelope.ts';
import { ResourceId } from '../schemas.ts';

export default function v2ApisGetApi(app: App, deps: Deps) {
  app.post(
    '/v2/apis.getApi',
    {
      schema: {
        ...v2Requires('Get an API', '`api.*.read_api` or `api.<apiId>.read_api`'),
        body: Body({ apiId: ResourceId }),
        response: v2Responses(Type.Object({ id: Type.String(), name: Type.String() })),
      },
    },
    async (req) => {
      const { id, name } = await getApi(deps.store.db, req.caller, req.body.apiId);
      return ok(req.id, { id, name });
    },
  );
}
