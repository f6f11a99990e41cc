import { Type } from '@sinclair/typebox';
import { setPermissions } from '../../../services/keys/key-links.ts';
import type { App, Deps } from '../../types.ts';
import { Body, NamedList, requires, responses } from '../../schemas/common.ts';
import { PermissionItem } from '../../schemas/permissions.ts';

export default function keysSetPermissions(app: App, deps: Deps) {
  app.post(
    '/v1/keys.setPermissions',
    {
      schema: {
        ...requires(
          'Replace the direct permissions of a key with exactly the listed set (atomic)',
          'both `rbac.*.add_permission_to_key` and `rbac.*.remove_permission_from_key`; plus `rbac.*.create_permission` when an item with `create: true` names a slug that does not exist',
        ),
        body: Body({
          keyId: Type.String({ minLength: 1 }),
          permissions: Type.Array(PermissionItem, { minItems: 1, maxItems: 1000 }),
        }),
        response: responses(NamedList('Every permission now connected to the key directly, sorted by name.')),
      },
    },
    (req) => setPermissions(deps.store.db, req.caller, req.body.keyId, req.body.permissions),
  );
}
