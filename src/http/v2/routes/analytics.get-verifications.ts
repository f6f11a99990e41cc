import { runAnalyticsQuery } from '../../../services/analytics/query/run.ts';
import type { App, Deps } from '../../types.ts';
import { ok, v2Requires, v2Responses } from '../envelope.ts';
import { AnalyticsQueryBody, AnalyticsRows } from '../analytics-schemas.ts';

/** Read-only SQL (ClickHouse's dialect) over the workspace's verification events and roll-ups (docs/analytics.md). */
export default function v2AnalyticsGetVerifications(app: App, deps: Deps) {
  app.post(
    '/v2/analytics.getVerifications',
    {
      schema: {
        ...v2Requires(
          'Query verification analytics with SQL: key_verifications_v1 and its per-minute/hour/day/month roll-ups',
          '`api.*.read_analytics`, or `api.<apiId>.read_analytics` (only those APIs are read)',
        ),
        body: AnalyticsQueryBody,
        response: v2Responses(AnalyticsRows),
      },
    },
    async (req) => ok(req.id, await runAnalyticsQuery(deps.store, req.caller, 'verifications', req.body.query)),
  );
}
