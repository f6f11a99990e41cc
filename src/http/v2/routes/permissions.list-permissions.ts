import { Type } from '@sinclair/typebox';
import { listPermissionsPage } from '../../../services/rbac/permissions.ts';
import type { App, Deps } from '../../types.ts';
import { Body } from '../../schemas/common.ts';
import { paged, v2PageResponses, v2Requires } from '../envelope.ts';
import { Search, V2Permission, v2Permission } from '../rbac-shapes.ts';
import { PageBody } from '../schemas.ts';

export default function v2PermissionsListPermissions(app: App, deps: Deps) {
  app.post(
    '/v2/permissions.listPermissions',
    {
      schema: {
        ...v2Requires('List the permissions of the workspace, by id', '`rbac.*.read_permission`'),
        body: Body({ ...PageBody, search: Type.Optional(Search) }),
        response: v2PageResponses(V2Permission),
      },
    },
    async (req) => {
      const { limit = 100, cursor, search } = req.body;
      const page = await listPermissionsPage(deps.store.db, req.caller, { limit, cursor, search: search?.trim() });
      return paged(req.id, page.permissions.map(v2Permission), page.cursor);
    },
  );
}
