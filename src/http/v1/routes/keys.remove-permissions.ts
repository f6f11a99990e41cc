import { Type } from '@sinclair/typebox';
import { removePermissions } from '../../../services/keys/key-links.ts';
import type { App, Deps } from '../../types.ts';
import { Body, requires, responses } from '../../schemas/common.ts';
import { PermissionRef } from '../../schemas/permissions.ts';

export default function keysRemovePermissions(app: App, deps: Deps) {
  app.post(
    '/v1/keys.removePermissions',
    {
      schema: {
        ...requires(
          'Disconnect every listed permission from a key (atomic); permissions through roles are not touched',
          '`rbac.*.remove_permission_from_key`',
        ),
        body: Body({
          keyId: Type.String({ minLength: 1 }),
          permissions: Type.Array(PermissionRef, { minItems: 1, maxItems: 1000 }),
        }),
        response: responses(Type.Object({})),
      },
    },
    async (req) => {
      await removePermissions(deps.store.db, req.caller, req.body.keyId, req.body.permissions);
      return {};
    },
  );
}
