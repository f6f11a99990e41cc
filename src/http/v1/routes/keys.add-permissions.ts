import { Type } from '@sinclair/typebox';
import { addPermissions } from '../../../services/keys/key-links.ts';
import type { App, Deps } from '../../types.ts';
import { Body, NamedList, requires, responses } from '../../schemas/common.ts';
import { PermissionItem } from '../../schemas/permissions.ts';

export default function keysAddPermissions(app: App, deps: Deps) {
  app.post(
    '/v1/keys.addPermissions',
    {
      schema: {
        ...requires(
          'Connect permissions to a key directly; ones already connected stay (atomic)',
          '`rbac.*.add_permission_to_key`; plus `rbac.*.create_permission` when an item with `create: true` names a slug that does not exist',
        ),
        body: Body({
          keyId: Type.String({ minLength: 1 }),
          permissions: Type.Array(PermissionItem, { minItems: 1, maxItems: 1000 }),
        }),
        response: responses(NamedList('The requested permissions, sorted by name.')),
      },
    },
    (req) => addPermissions(deps.store.db, req.caller, req.body.keyId, req.body.permissions),
  );
}
