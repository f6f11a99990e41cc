import { Type } from '@sinclair/typebox';
import { MAX_QUERY_ITEMS, MAX_TAG_LENGTH, MAX_TAGS } from '../../../domain/bounds.ts';
import { getApiVerifications, GROUPINGS, ORDER_FIELDS } from '../../../services/analytics/api-verifications.ts';
import type { App, Deps } from '../../types.ts';
import { OneOf, requires, responses, Bounded, QueryList, Tag } from '../../schemas/common.ts';

const Grouping = OneOf(GROUPINGS);
const KeyId = Type.String({ minLength: 1 });
const Count = Type.Integer({ minimum: 0 });

const Query = Type.Object({
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
      4,
      'Groupings to combine: at most one of hour, day, month; at most one of tag (a row per single tag: a ' +
        'verification counts once for each tag it carries, and not at all without tags) and tags (a row per tag ' +
        'set, exactly as recorded). Grouped by time alone, the series is zero-filled.',
    ),
  ),
  tag: Type.Optional(
    QueryList(
      Tag,
      MAX_TAGS,
      `Only verifications carrying all of these tags (at most ${MAX_TAGS}, each 1–${MAX_TAG_LENGTH} characters, ` +
        'compared exactly). A tag holding a comma cannot be given here.',
    ),
  ),
  limit: Type.Optional(Bounded('count', { minimum: 1 })),
  orderBy: Type.Optional(OneOf(ORDER_FIELDS)),
  order: Type.Optional(OneOf(['asc', 'desc'] as const)),
});

const Row = Type.Object({
  time: Type.Optional(Type.Integer({ description: 'Start of the bucket (UTC hour, day or month), epoch ms.' })),
  keyId: Type.Optional(Type.String()),
  identity: Type.Optional(Type.Object({ id: Type.String(), externalId: Type.String() })),
  tag: Type.Optional(Type.String({ description: 'Grouped by tag: the tag counted.' })),
  tags: Type.Optional(Type.Array(Type.String(), { description: 'Grouped by tags: the tag set counted, as recorded.' })),
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
});

export default function analyticsGetVerifications(app: App, deps: Deps) {
  app.get(
    '/v1/analytics.getVerifications',
    {
      schema: {
        ...requires("Verification counts of an API's keys, grouped by time, key, identity or tag", '`api.<apiId>.read_analytics`'),
        querystring: Query,
        response: responses(Type.Array(Row)),
      },
    },
    (req) => getApiVerifications(deps.store.db, req.caller, req.query),
  );
}
