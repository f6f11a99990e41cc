import { Type } from '@sinclair/typebox';
import { invalid } from '../../../domain/errors.ts';
import { updateKey } from '../../../services/keys/update-key.ts';
import type { App, Deps } from '../../types.ts';
import { Body, Bounded, Meta, Nullable } from '../../schemas/common.ts';
import { ok, v2Requires, v2Responses } from '../envelope.ts';
import {
  PermissionSlugs,
  RoleNames,
  updateKeyInput,
  updateKeyRules,
  V2Expires,
  V2ExternalId,
  V2KeyName,
  V2Ratelimits,
  V2RefillRequest,
  withV2Paths,
} from '../key-requests.ts';
import { ResourceId } from '../schemas.ts';

export default function v2KeysUpdateKey(app: App, deps: Deps) {
  app.post(
    '/v2/keys.updateKey',
    {
      config: { bodyRules: updateKeyRules },
      schema: {
        ...v2Requires(
          "Update a key: absent members stay as they are, `null` clears one; `ratelimits`, `roles` and `permissions` replace the key's (atomic)",
          '`api.*.update_key` or `api.<apiId>.update_key`; with `roles` also `rbac.*.add_role_to_key`; with `permissions` also `rbac.*.add_permission_to_key` and `rbac.*.remove_permission_from_key`, and `rbac.*.create_permission` when a slug does not exist (it is created)',
        ),
        body: Body({
          keyId: ResourceId,
          name: Type.Optional(Nullable(V2KeyName)),
          externalId: Type.Optional(Nullable(V2ExternalId)),
          meta: Type.Optional(Nullable(Meta)),
          expires: Type.Optional(Nullable(V2Expires)),
          credits: Type.Optional(
            Nullable(
              Type.Object(
                {
                  remaining: Type.Optional(
                    Nullable(Bounded('count', { description: 'null: unlimited (and the refill is removed with the count).' })),
                  ),
                  refill: Type.Optional(Nullable(V2RefillRequest)),
                },
                { additionalProperties: false, description: 'null: unlimited, without refill.' },
              ),
            ),
          ),
          ratelimits: Type.Optional(V2Ratelimits),
          enabled: Type.Optional(Type.Boolean()),
          roles: Type.Optional(RoleNames(0)),
          permissions: Type.Optional(PermissionSlugs(0)),
        }),
        response: v2Responses(Type.Object({})),
      },
    },
    async (req) => {
      const problems = updateKeyRules(req.body);
      if (problems.length) throw invalid(problems);
      await withV2Paths(updateKey(deps.store.db, req.caller, updateKeyInput(req.body)));
      return ok(req.id, {});
    },
  );
}
