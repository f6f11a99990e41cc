import { Type } from '@sinclair/typebox';
import { MAX_QUERY_ITEMS } from '../../../domain/bounds.ts';
import { getApiVerifications, GROUPINGS, ORDER_FIELDS } from '../../../services/analytics/api-verifications.ts';
import type { App, Deps } from '../../types.ts';
import { OneOf, requires, responses, Bounded, QueryList } from '../../schemas/common.ts';

const Grouping = OneOf(GROUPINGS);
const KeyId = Type.String({ minLength: 1 });
const Count = Type.Integer({ minimum: 0 });

export default function analyticsGetVerifications(app: App, deps: Deps) {
  app.get(
    '/v1/analytics.getVerifications',
    {
      schema: {
        ...requires("Verification counts of an API's keys, grouped by time, key or identity", '`api.<apiId>.read_analytics`'),
        querystring: Type.Object({
          apiId: Type.String({ minLength: 1 }),
          start: Bounded('timestamp', { description: 'Epoch ms. Widened to the start of its bucket.' }),
          end: Type.Optional(
            Bounded('timestamp', { minimum: 1, description: 'Epoch ms, exclusive; default now. Widened to the end of its bucket.' }),
          ),
          keyId: Type.Optional(QueryList(KeyId, MAX_QUERY_ITEMS, `Only these keys (at most ${MAX_QUERY_ITEMS}).`)),
          externalId: Type.Optional(Type.String({ minLength: 1, description: "Only verifications of this identity's keys." })),
          groupBy: Type.Optional(
            QueryList(
              Grouping,
              3,
              'Groupings to combine: at most one of hour, day, month. Grouped by time alone, the series is zero-filled. ' +
                'tag and tags are not supported (a 400).',
            ),
          ),
          tag: Type.Optional(
            Type.Array(Type.String(), {
              maxItems: MAX_QUERY_ITEMS,
              description: 'Not supported: this version does not record the `tags` of keys.verifyKey, so any `tag` is a 400.',
            }),
          ),
          limit: Type.Optional(Bounded('count', { minimum: 1 })),
          orderBy: Type.Optional(OneOf(ORDER_FIELDS)),
          order: Type.Optional(OneOf(['asc', 'desc'] as const)),
        }),
        response: responses(
          Type.Array(
            Type.Object({
              time: Type.Optional(Type.Integer({ description: 'Start of the bucket (UTC hour, day or month), epoch ms.' })),
              keyId: Type.Optional(Type.String()),
              identity: Type.Optional(Type.Object({ id: Type.String(), externalId: Type.String() })),
              valid: Count,
              notFound: Count,
              forbidden: Count,
              usageExceeded: Count,
              rateLimited: Count,
              unauthorized: Count,
              disabled: Count,
              insufficientPermissions: Count,
              expired: Count,
              total: Count,
            }),
          ),
        ),
      },
    },
    (req) => getApiVerifications(deps.store.db, req.caller, req.query),
  );
}
