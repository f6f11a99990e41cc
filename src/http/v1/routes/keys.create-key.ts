import { Type } from '@sinclair/typebox';
import { createKey } from '../../../services/keys/create-key.ts';
import { keyAttributeProblems } from '../../../services/keys/key-attributes.ts';
import type { App, Deps } from '../../types.ts';
import { Body, Meta, requires, responses, Bounded } from '../../schemas/common.ts';
import { Ratelimit, Refill } from '../../schemas/keys.ts';

const Name = Type.String({ minLength: 1, maxLength: 512 });

export default function keysCreateKey(app: App, deps: Deps) {
  app.post(
    '/v1/keys.createKey',
    {
      config: { bodyRules: keyAttributeProblems },
      schema: {
        ...requires(
          'Create a key; its plaintext is returned once',
          '`api.<apiId>.create_key`; with `recoverable` also `api.<apiId>.encrypt_key`; to create missing roles `rbac.*.create_role`, missing permissions `rbac.*.create_permission`',
        ),
        body: Body({
          apiId: Type.String({ minLength: 1 }),
          prefix: Type.Optional(Type.String({ maxLength: 16 })),
          name: Type.Optional(Type.String({ maxLength: 256 })),
          byteLength: Type.Optional(
            Type.Integer({ minimum: 16, maximum: 255, description: "Random bytes; default the API's default, else 16." }),
          ),
          ownerId: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'Deprecated: use externalId.' })),
          externalId: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
          meta: Type.Optional(Meta),
          roles: Type.Optional(Type.Array(Name, { maxItems: 1000 })),
          permissions: Type.Optional(Type.Array(Name, { maxItems: 1000 })),
          expires: Type.Optional(Bounded('timestamp', { description: 'Epoch milliseconds.' })),
          remaining: Type.Optional(Bounded('count', { minimum: 1 })),
          refill: Type.Optional(Refill),
          ratelimit: Type.Optional(Ratelimit),
          enabled: Type.Optional(Type.Boolean()),
          recoverable: Type.Optional(Type.Boolean()),
          environment: Type.Optional(Type.String({ maxLength: 256 })),
        }),
        response: responses(Type.Object({ keyId: Type.String(), key: Type.String() })),
      },
    },
    (req) => {
      return createKey(deps.store.db, req.caller, req.body, deps.vault, deps.apis);
    },
  );
}
