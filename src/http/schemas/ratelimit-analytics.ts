import { Type } from '@sinclair/typebox';
import { DEFAULT_IDENTIFIERS, MAX_IDENTIFIERS, RATELIMIT_GROUPINGS } from '../../services/analytics/ratelimit-analytics.ts';
import { Bounded, OneOf } from './common.ts';
import { NamespaceRefProps, RatelimitIdentifier } from './ratelimits.ts';

const Count = Type.Integer({ minimum: 0 });

/** The query of ratelimits.getAnalytics. */
export const RatelimitAnalyticsQuery = Type.Object({
  ...NamespaceRefProps,
  identifier: Type.Optional({ ...RatelimitIdentifier, description: 'Only the decisions for this identifier (exact match, no patterns).' }),
  start: Bounded('timestamp', { description: 'Epoch ms. Widened to the start of its bucket (hour, or day when grouped by day).' }),
  end: Type.Optional(
    Bounded('timestamp', { minimum: 1, description: 'Epoch ms, exclusive; default now. Widened to the end of its bucket.' }),
  ),
  groupBy: Type.Optional({
    ...OneOf(RATELIMIT_GROUPINGS),
    description: 'hour (default) or day (UTC): a time series of the buckets with decisions; identifier: totals per identifier.',
  }),
  limit: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: MAX_IDENTIFIERS,
      description: `groupBy identifier only: how many identifiers, the most decisions first; default ${DEFAULT_IDENTIFIERS}.`,
    }),
  ),
});

/** The answer of ratelimits.getAnalytics. */
export const RatelimitAnalytics = Type.Object({
  analytics: Type.Array(
    Type.Object({
      time: Type.Optional(Type.Integer({ description: 'Start of the bucket (UTC hour or day), epoch ms; grouped by time.' })),
      identifier: Type.Optional(Type.String({ description: 'Grouped by identifier.' })),
      passed: Count,
      denied: Count,
      total: Count,
    }),
    {
      description:
        'Grouped by hour or day: the buckets with at least one decision, ascending by time. Grouped by identifier: ' +
        `the identifiers with decisions, the most first, at most \`limit\` (≤ ${MAX_IDENTIFIERS}).`,
    },
  ),
});
