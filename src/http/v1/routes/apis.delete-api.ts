import { Type } from '@sinclair/typebox';
import { deleteApi } from '../../../services/apis/apis.ts';
import type { App, Deps } from '../../types.ts';
import { Body, requires, responses } from '../../schemas/common.ts';

export default function apisDeleteApi(app: App, deps: Deps) {
  app.post(
    '/v1/apis.deleteApi',
    {
      schema: {
        ...requires('Delete an API and all of its keys (soft delete)', '`api.<apiId>.delete_api`'),
        body: Body({ apiId: Type.String({ minLength: 1 }) }),
        response: responses(Type.Object({})),
      },
    },
    async (req) => {
      await deleteApi(deps.store.db, req.caller, req.body.apiId);
      return {};
    },
  );
}
