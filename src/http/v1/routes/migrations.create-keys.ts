import { Type } from '@sinclair/typebox';
import { AppError, type FieldProblem } from '../../../domain/errors.ts';
import { createKeysByMigration, importProblems, MAX_IMPORT_ITEMS } from '../../../services/migrations/import-keys.ts';
import type { App, Deps } from '../../types.ts';
import { validationProblems } from '../../errors.ts';
import { Meta, OneOf, requires, responses } from '../../schemas.ts';
import { Refill } from './keys.create-key.ts';

const Name = Type.String({ minLength: 1, maxLength: 512 });

/** The createKeys form of a key's rate limit (seed), stored as its auto-applied limit `default`: `limit` requests per `refillInterval` ms. */
export const MigrationRatelimit = Type.Object({
  type: Type.Optional(OneOf(['fast', 'consistent'] as const)),
  async: Type.Optional(Type.Boolean({ description: 'Deprecated: true means type fast.' })),
  limit: Type.Integer({ minimum: 1 }),
  refillRate: Type.Optional(Type.Integer({ minimum: 1, description: 'Deprecated; accepted and ignored (the window holds `limit` requests).' })),
  refillInterval: Type.Integer({ minimum: 1000, description: 'Window in milliseconds.' }),
}, { additionalProperties: false });

export const ImportItem = Type.Object({
  apiId: Type.String({ minLength: 1 }),
  prefix: Type.Optional(Type.String({ maxLength: 8, description: 'The plaintext must start with `<prefix>_`.' })),
  name: Type.Optional(Type.String({ maxLength: 256 })),
  plaintext: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: 'The whole key; stored only hashed and encrypted. Give exactly one of plaintext and hash.' })),
  hash: Type.Optional(Type.Object({
    value: Type.String({ description: 'Standard base64 (with padding) of the SHA-256 of the whole key.' }),
    variant: OneOf(['sha256_base64'] as const),
  }, { additionalProperties: false })),
  start: Type.Optional(Type.String({ maxLength: 64, description: 'Default: prefix + `_` + 4 characters of a plaintext (its first 4 without a prefix); for a hash, prefix + `_`, or "".' })),
  ownerId: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'Deprecated: use externalId.' })),
  externalId: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
  meta: Type.Optional(Meta),
  roles: Type.Optional(Type.Array(Name, { maxItems: 1000, description: 'Role names; each must exist.' })),
  permissions: Type.Optional(Type.Array(Name, { maxItems: 1000, description: 'Permission slugs; each must exist.' })),
  expires: Type.Optional(Type.Integer({ minimum: 0, description: 'Epoch milliseconds.' })),
  remaining: Type.Optional(Type.Integer({ minimum: 1 })),
  refill: Type.Optional(Refill),
  ratelimit: Type.Optional(MigrationRatelimit),
  enabled: Type.Optional(Type.Boolean()),
  environment: Type.Optional(Type.String({ maxLength: 256 })),
}, { additionalProperties: false });

/** Schema problems plus the item rules, one entry per path (an item rule at a path the schema already reported adds nothing). */
function bodyProblems(schema: FieldProblem[], body: unknown): FieldProblem[] {
  const seen = new Set(schema.map((p) => p.path));
  const semantic = Array.isArray(body) ? importProblems(body).filter((p) => !seen.has(p.path)) : [];
  return [...schema, ...semantic].sort((a, b) => a.path.localeCompare(b.path, 'en', { numeric: true }));
}

const summary = (problems: FieldProblem[]): string =>
  problems.slice(0, 10).map((p) => `${p.path} ${p.message}`).join('; ') + (problems.length > 10 ? `; … and ${problems.length - 10} more` : '');

export default function migrationsCreateKeys(app: App, deps: Deps) {
  app.post('/v1/migrations.createKeys', {
    // A body that fails the schema reaches the handler, so the item rules are reported with the schema problems.
    attachValidation: true,
    schema: {
      ...requires('Import keys from existing key material (hashes or plaintexts), all or nothing',
        'for every distinct apiId `api.<apiId>.create_key`; plus `api.<apiId>.encrypt_key` when an item for it has `plaintext`'),
      body: Type.Array(ImportItem, { minItems: 1, maxItems: MAX_IMPORT_ITEMS }),
      response: responses(Type.Object({ keyIds: Type.Array(Type.String(), { description: 'The new key ids, in request order.' }) })),
    },
  }, (req) => {
    const issues = req.validationError?.validation as Parameters<typeof validationProblems>[0] | undefined;
    if (req.validationError && !issues) throw req.validationError;
    const problems = bodyProblems(issues ? validationProblems(issues) : [], req.body);
    if (problems.length) throw new AppError('request/invalid-body', `The request body is invalid: ${summary(problems)}`, problems);
    return createKeysByMigration(deps.store.db, req.caller, req.body, deps.vault);
  });
}
