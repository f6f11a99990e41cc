import { Type } from '@sinclair/typebox';
import { createApi } from '../../../services/apis/apis.ts';
import type { App, Deps } from '../../types.ts';
import { Body } from '../../schemas/common.ts';
import { ok, v2Requires, v2Responses } from '../envelope.ts';

export default function v2ApisCreateApi(app: App, deps: Deps) {
  app.post(
    '/v2/apis.createApi',
    {
      schema: {
        ...v2Requires('Create an API (a keyspace for keys)', '`api.*.create_api`'),
        body: Body({ name: Type.String({ minLength: 3, maxLength: 256 }) }),
        response: v2Responses(Type.Object({ apiId: Type.String() })),
      },
    },
    async (req) => {
      const { apiId } = await createApi(deps.store.db, req.caller, req.body);
      return ok(req.id, { apiId });
    },
  );
}
