import { Type } from '@sinclair/typebox';
import { isObject } from '../../../domain/json.ts';
import { invalid, type FieldProblem } from '../../../domain/errors.ts';
import { MAX_MIGRATE_KEYS, migrateKeys, type MigrateKeyItem } from '../../../services/migrations/migrate-keys.ts';
import type { App, Deps } from '../../types.ts';
import { Body, Bounded, Meta, Nullable } from '../../schemas/common.ts';
import { ok, v2Requires, v2Responses } from '../envelope.ts';
import {
  createKeyRules,
  PermissionSlugs,
  RoleNames,
  V2Expires,
  V2KeyName,
  V2Ratelimits,
  V2RefillRequest,
  type V2CreateKeyBody,
} from '../key-requests.ts';
import { ResourceId } from '../schemas.ts';

const MigrateKey = Type.Object(
  {
    hash: Type.String({
      minLength: 3,
      description:
        "The key's hash in the migration's algorithm's form: `sha256` standard base64 (padded) of the SHA-256 of the whole key, `sha256_hex` its 64 hex digits, `sha256_base64url` its base64url, `github.com/seamapi/prefixed-api-key` the 64 hex digits of the SHA-256 of the long token.",
    }),
    name: Type.Optional(V2KeyName),
    externalId: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'Links (and if needed creates) an identity.' })),
    meta: Type.Optional(Meta),
    roles: Type.Optional(RoleNames(0)),
    permissions: Type.Optional(PermissionSlugs(0)),
    expires: Type.Optional(V2Expires),
    enabled: Type.Optional(Type.Boolean({ default: true })),
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
  },
  { additionalProperties: false },
);

type V2MigrateKey = Omit<MigrateKeyItem, 'remaining' | 'refill'> & { credits?: V2CreateKeyBody['credits'] };

/** The cross-field rules of every key (those of keys.createKey), at `/keys/<i>/…`; safe on a body that failed its schema. */
function migrateKeysRules(body: unknown): FieldProblem[] {
  if (!isObject(body) || !Array.isArray(body.keys)) return [];
  return body.keys.flatMap((key, i) => createKeyRules(key).map((p) => ({ path: `/keys/${i}${p.path}`, message: p.message })));
}

/** A key's credits as the import's remaining and refill (`remaining: null`: unlimited). */
function importItem({ credits, ...rest }: V2MigrateKey): MigrateKeyItem {
  return { ...rest, remaining: credits?.remaining ?? undefined, refill: credits?.refill };
}

export default function v2KeysMigrateKeys(app: App, deps: Deps) {
  app.post(
    '/v2/keys.migrateKeys',
    {
      config: { bodyRules: migrateKeysRules },
      schema: {
        ...v2Requires(
          "Import keys by their hashes into a migration (created by the operator: `keyhold migrations create --algorithm`), all in one transaction. Keys whose key exists already are skipped and listed in `failed`; roles and permissions must exist. A key whose hash is not Keyhold's `sha256` is rewritten to it on its first keys.verifyKey naming the migration.",
          '`api.*.create_key` or `api.<apiId>.create_key`',
        ),
        body: Body({
          migrationId: ResourceId,
          apiId: ResourceId,
          keys: Type.Array(MigrateKey, { minItems: 1, maxItems: MAX_MIGRATE_KEYS }),
        }),
        response: v2Responses(
          Type.Object({
            migrated: Type.Array(Type.Object({ hash: Type.String(), keyId: Type.String() }), {
              description: 'The keys made, in request order.',
            }),
            failed: Type.Array(Type.String(), { description: 'The hashes of the keys skipped because the key exists already.' }),
          }),
        ),
      },
    },
    async (req) => {
      // The rules keys.createKey states (v2's: a monthly refill names its day), for keys the service may skip too.
      const problems = migrateKeysRules(req.body);
      if (problems.length) throw invalid(problems);
      const { migrationId, apiId, keys } = req.body;
      return ok(req.id, await migrateKeys(deps.store.db, req.caller, { migrationId, apiId, keys: keys.map(importItem) }));
    },
  );
}
