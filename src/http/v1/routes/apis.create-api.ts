import { Type } from '@sinclair/typebox';
import { createApi } from '../../../services/apis/apis.ts';
import type { App, Deps } from '../../types.ts';
import { Body, requires, responses } from '../../schemas/common.ts';

export default function apisCreateApi(app: App, deps: Deps) {
  app.post(
    '/v1/apis.createApi',
    {
      schema: {
        ...requires('Create an API (a keyspace for keys)', '`api.*.create_api`'),
        body: Body({ name: Type.String({ minLength: 3, maxLength: 256 }) }),
        response: responses(Type.Object({ apiId: Type.String(), name: Type.String() })),
      },
    },
    (req) => createApi(deps.store.db, req.caller, req.body),
  );
}
