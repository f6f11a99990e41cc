import { getRatelimitAnalytics } from '../../../services/analytics/ratelimit-analytics.ts';
import type { App, Deps } from '../../types.ts';
import { requires, responses } from '../../schemas/common.ts';
import { RatelimitAnalytics, RatelimitAnalyticsQuery } from '../../schemas/ratelimit-analytics.ts';

export default function ratelimitsGetAnalytics(app: App, deps: Deps) {
  app.get(
    '/v1/ratelimits.getAnalytics',
    {
      schema: {
        ...requires(
          'Passed and denied ratelimits.limit decisions of a namespace, per hour, day or identifier',
          '`ratelimit.<namespaceId>.read_namespace`',
        ),
        querystring: RatelimitAnalyticsQuery,
        response: responses(RatelimitAnalytics),
      },
    },
    (req) => getRatelimitAnalytics(deps.store.db, req.caller, req.query),
  );
}
