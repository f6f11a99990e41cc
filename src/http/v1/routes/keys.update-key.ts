import { Type } from '@sinclair/typebox';
import { updateKey, updateKeyProblems } from '../../../services/keys/update-key.ts';
import type { App, Deps } from '../../types.ts';
import { Body, Meta, Nullable, requires, responses, Bounded } from '../../schemas/common.ts';
import { Ratelimit, Refill } from '../../schemas/keys.ts';
import { PermissionItem, RoleItem } from '../../schemas/permissions.ts';

export default function keysUpdateKey(app: App, deps: Deps) {
  app.post(
    '/v1/keys.updateKey',
    {
      config: { bodyRules: updateKeyProblems },
      schema: {
        ...requires(
          "Update a key: absent members stay as they are, `null` clears one; `roles`/`permissions` replace the key's (atomic)",
          '`api.<apiId>.update_key`; with `roles` also `rbac.*.add_role_to_key`; with `permissions` also `rbac.*.add_permission_to_key` and `rbac.*.remove_permission_from_key`; plus `rbac.*.create_role` / `rbac.*.create_permission` for items with `create: true` that do not exist',
        ),
        body: Body({
          keyId: Type.String({ minLength: 1 }),
          name: Type.Optional(Nullable(Type.String({ maxLength: 256 }))),
          ownerId: Type.Optional(
            Nullable(
              Type.String({ minLength: 1, maxLength: 256, description: 'Deprecated: use externalId (which wins when both are given).' }),
            ),
          ),
          externalId: Type.Optional(
            Nullable(
              Type.String({
                minLength: 1,
                maxLength: 256,
                description: 'Links the key to this identity (created on first use); null unlinks it.',
              }),
            ),
          ),
          meta: Type.Optional(Nullable(Meta)),
          expires: Type.Optional(Nullable(Bounded('timestamp', { description: 'Epoch milliseconds; null: never expires.' }))),
          remaining: Type.Optional(Nullable(Bounded('count', { description: 'Credits left; 0 allowed; null: unlimited.' }))),
          refill: Type.Optional(Nullable(Refill)),
          ratelimit: Type.Optional(Nullable(Ratelimit)),
          enabled: Type.Optional(Type.Boolean()),
          environment: Type.Optional(Nullable(Type.String({ maxLength: 256 }))),
          roles: Type.Optional(
            Type.Array(RoleItem, { maxItems: 1000, description: "The key's roles become exactly these, as with keys.setRoles." }),
          ),
          permissions: Type.Optional(
            Type.Array(PermissionItem, {
              maxItems: 1000,
              description: "The key's direct permissions become exactly these, as with keys.setPermissions.",
            }),
          ),
        }),
        response: responses(Type.Object({})),
      },
    },
    async (req) => {
      await updateKey(deps.store.db, req.caller, req.body);
      return {};
    },
  );
}
