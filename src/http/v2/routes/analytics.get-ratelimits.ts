import { runAnalyticsQuery } from '../../../services/analytics/query/run.ts';
import type { App, Deps } from '../../types.ts';
import { ok, v2Requires, v2Responses } from '../envelope.ts';
import { AnalyticsQueryBody, AnalyticsRows } from '../analytics-schemas.ts';

/** Read-only SQL (ClickHouse's dialect) over the workspace's rate-limit checks and roll-ups (docs/analytics.md). */
export default function v2AnalyticsGetRatelimits(app: App, deps: Deps) {
  app.post(
    '/v2/analytics.getRatelimits',
    {
      schema: {
        ...v2Requires(
          'Query rate-limit analytics with SQL: ratelimits_v1 and its per-minute/hour/day/month roll-ups',
          '`ratelimit.*.read_analytics`, or `ratelimit.<namespaceId>.read_analytics` (only those namespaces are read)',
        ),
        body: AnalyticsQueryBody,
        response: v2Responses(AnalyticsRows),
      },
    },
    async (req) => ok(req.id, await runAnalyticsQuery(deps.store, req.caller, 'ratelimits', req.body.query)),
  );
}
