import { Type } from '@sinclair/typebox';
import { deleteApi } from '../../../services/apis/apis.ts';
import type { App, Deps } from '../../types.ts';
import { Body } from '../../schemas/common.ts';
import { ok, v2Requires, v2Responses } from '../envelope.ts';
import { ResourceId } from '../schemas.ts';

export default function v2ApisDeleteApi(app: App, deps: Deps) {
  app.post(
    '/v2/apis.deleteApi',
    {
      schema: {
        ...v2Requires('Delete an API (soft delete); its keys stop verifying with it', '`api.*.delete_api` or `api.<apiId>.delete_api`'),
        body: Body({ apiId: ResourceId }),
        response: v2Responses(Type.Object({})),
      },
    },
    async (req) => {
      await deleteApi(deps.store.db, req.caller, req.body.apiId);
      return ok(req.id, {});
    },
  );
}
