import { Type } from '@sinclair/typebox';
import { AppError, type FieldProblem } from '../../../domain/errors.ts';
import { enqueueItemProblems, enqueueKeys, MAX_ENQUEUE_ITEMS } from '../../../services/migrations/key-migrations.ts';
import type { App, Deps } from '../../types.ts';
import { validationProblems } from '../../errors.ts';
import { OneOf, requires, responses } from '../../schemas.ts';
import { ImportItem } from './migrations.create-keys.ts';

/** The enqueueKeys form of a key's rate limit (seed): `limit` requests per `duration` ms, stored as its auto-applied limit `default`. */
const EnqueueRatelimit = Type.Object({
  type: Type.Optional(OneOf(['fast', 'consistent'] as const)),
  async: Type.Optional(Type.Boolean({ description: 'Deprecated: true means type fast.' })),
  limit: Type.Integer({ minimum: 1 }),
  duration: Type.Integer({ minimum: 1000, description: 'Window in milliseconds.' }),
}, { additionalProperties: false });

// Declared so that they are reported rather than silently dropped with the other undeclared members.
const NOT_ALLOWED: Record<string, string> = {
  apiId: 'is not allowed in an item: the API is the request\'s apiId',
  externalId: 'is not allowed in an item of migrations.enqueueKeys (ownerId links the key to an identity)',
};
const { apiId: _apiId, externalId: _externalId, ratelimit: _ratelimit, ...shared } = ImportItem.properties;
const EnqueueItem = Type.Object({
  ...shared,
  ratelimit: Type.Optional(EnqueueRatelimit),
  apiId: Type.Optional(Type.Never({ description: 'Not allowed: give apiId once, at the top level.' })),
  externalId: Type.Optional(Type.Never({ description: 'Not allowed here.' })),
}, { additionalProperties: false });

/** Schema problems (with clear words for the members that are not allowed) plus the item rules, one entry per path. */
function bodyProblems(schema: FieldProblem[], body: unknown): FieldProblem[] {
  const named = schema.map((p) => {
    const member = /^\/keys\/\d+\/(apiId|externalId)$/.exec(p.path)?.[1];
    return member ? { path: p.path, message: NOT_ALLOWED[member] } : p;
  });
  const seen = new Set(named.map((p) => p.path));
  const semantic = enqueueItemProblems(body).filter((p) => !seen.has(p.path));
  return [...named, ...semantic].sort((a, b) => a.path.localeCompare(b.path, 'en', { numeric: true }));
}

const summary = (problems: FieldProblem[]): string =>
  problems.slice(0, 10).map((p) => `${p.path} ${p.message}`).join('; ') + (problems.length > 10 ? `; … and ${problems.length - 10} more` : '');

export default function migrationsEnqueueKeys(app: App, deps: Deps) {
  app.post('/v1/migrations.enqueueKeys', {
    // A body that fails the schema reaches the handler, so the item rules are reported with the schema problems.
    attachValidation: true,
    schema: {
      ...requires('Queue up to 100 keys (hashes or plaintexts) for import into one API; workers import them, and migrations.getMigration reports each outcome',
        '`api.<apiId>.create_key`; plus `api.<apiId>.encrypt_key` when an item has `plaintext`'),
      body: Type.Object({
        migrationId: Type.String({ minLength: 1, description: 'From the operator: `keyhold migrations create --workspace <ws>`.' }),
        apiId: Type.String({ minLength: 1 }),
        keys: Type.Array(EnqueueItem, { minItems: 1, maxItems: MAX_ENQUEUE_ITEMS }),
      }, { additionalProperties: false }),
      response: responses(Type.Object({
        migrationId: Type.String(),
        enqueued: Type.Integer({ description: 'Items committed to the migration by this request; each ends as migrated or failed.' }),
      }), 202),
    },
  }, async (req, reply) => {
    const issues = req.validationError?.validation as Parameters<typeof validationProblems>[0] | undefined;
    if (req.validationError && !issues) throw req.validationError;
    const problems = bodyProblems(issues ? validationProblems(issues) : [], req.body);
    if (problems.length) throw new AppError('request/invalid-body', `The request body is invalid: ${summary(problems)}`, problems);
    const result = await enqueueKeys(deps.store.db, req.caller, req.body, deps.vault);
    return reply.code(202).send(result);
  });
}
