import { Type } from '@sinclair/typebox';
import { invalid, notFound } from '../../../domain/errors.ts';
import { createKey } from '../../../services/keys/create-key.ts';
import type { App, Deps } from '../../types.ts';
import { Body, Bounded, Meta, Nullable } from '../../schemas/common.ts';
import { ok, v2Requires, v2Responses } from '../envelope.ts';
import { hideDenial } from '../hide-denial.ts';
import {
  createKeyInput,
  createKeyRules,
  PermissionSlugs,
  RoleNames,
  V2Expires,
  V2ExternalId,
  V2KeyName,
  V2Ratelimits,
  V2RefillRequest,
  withV2Paths,
} from '../key-requests.ts';
import { ResourceId } from '../schemas.ts';

export default function v2KeysCreateKey(app: App, deps: Deps) {
  app.post(
    '/v2/keys.createKey',
    {
      config: { bodyRules: createKeyRules },
      schema: {
        ...v2Requires(
          'Create a key; its plaintext is returned once. Without the permission to create keys in the API, the answer is the 404 of a missing API.',
          '`api.*.create_key` or `api.<apiId>.create_key`; with `recoverable` also `encrypt_key`; `rbac.*.create_permission` when a permission slug does not exist (it is created)',
        ),
        body: Body({
          apiId: ResourceId,
          prefix: Type.Optional(Type.String({ minLength: 1, maxLength: 16, pattern: '^[a-zA-Z0-9_]+$' })),
          name: Type.Optional(V2KeyName),
          byteLength: Type.Optional(
            Type.Integer({ minimum: 16, maximum: 255, description: "Random bytes; default the API's default, else 16." }),
          ),
          externalId: Type.Optional(V2ExternalId),
          meta: Type.Optional(Meta),
          roles: Type.Optional(RoleNames(0)),
          permissions: Type.Optional(PermissionSlugs(0)),
          expires: Type.Optional(V2Expires),
          credits: Type.Optional(
            Type.Object(
              {
                remaining: Nullable(Bounded('count', { description: 'Credits the key starts with; null: unlimited.' })),
                refill: Type.Optional(V2RefillRequest),
              },
              { additionalProperties: false },
            ),
          ),
          ratelimits: Type.Optional(V2Ratelimits),
          enabled: Type.Optional(Type.Boolean()),
          recoverable: Type.Optional(Type.Boolean({ description: 'Store an encrypted copy, readable with `decrypt`.' })),
        }),
        response: v2Responses(Type.Object({ keyId: Type.String(), key: Type.String() })),
      },
    },
    async (req) => {
      // The v2-only rules (a monthly refill names its day) are checked here; the service checks the rest again.
      const problems = createKeyRules(req.body);
      if (problems.length) throw invalid(problems);
      const { apiId, recoverable } = req.body;
      const needed = [`api.${apiId}.create_key`, ...(recoverable ? [`api.${apiId}.encrypt_key`] : [])];
      const work = withV2Paths(createKey(deps.store.db, req.caller, createKeyInput(req.body), deps.vault, deps.apis));
      const { keyId, key } = await hideDenial(work, req.caller, needed, () => notFound('api', apiId));
      return ok(req.id, { keyId, key });
    },
  );
}
