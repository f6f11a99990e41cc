import { Type } from '@sinclair/typebox';
import { listRolesPage } from '../../../services/rbac/roles.ts';
import type { App, Deps } from '../../types.ts';
import { Body } from '../../schemas/common.ts';
import { paged, v2PageResponses, v2Requires } from '../envelope.ts';
import { Search, V2Role, v2Role } from '../rbac-shapes.ts';
import { PageBody } from '../schemas.ts';

export default function v2PermissionsListRoles(app: App, deps: Deps) {
  app.post(
    '/v2/permissions.listRoles',
    {
      schema: {
        ...v2Requires('List the roles of the workspace (with their permissions), by id', '`rbac.*.read_role`'),
        body: Body({ ...PageBody, search: Type.Optional(Search) }),
        response: v2PageResponses(V2Role),
      },
    },
    async (req) => {
      const { limit = 100, cursor, search } = req.body;
      const page = await listRolesPage(deps.store.db, req.caller, { limit, cursor, search: search?.trim() });
      return paged(req.id, page.roles.map(v2Role), page.cursor);
    },
  );
}
