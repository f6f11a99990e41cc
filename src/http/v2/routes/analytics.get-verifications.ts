import { Type } from '@sinclair/typebox';
import { AppError } from '../../../domain/errors.ts';
import { requirePermissions, type Caller } from '../../../services/caller.ts';
import type { App } from '../../types.ts';
import { Body } from '../../schemas/common.ts';
import { v2Requires, v2Responses } from '../envelope.ts';

export const NOT_OFFERED =
  'Raw SQL analytics (analytics.getVerifications of the v2 API) are not offered by this server: it keeps no verification event store to query. ' +
  'Verification counts per API, grouped by time, key or identity, are served by GET /v1/analytics.getVerifications ' +
  '(and per key by GET /v1/keys.getVerifications).';

/** Whether the caller may read some API's analytics, as v2 asks (`api.*.read_analytics`, or that of one API). */
const readsAnalytics = (caller: Caller): boolean =>
  [...caller.permissions].some((p) => p === '*' || /^api\.[^.]+\.read_analytics$/.test(p));

/**
 * Unkey v2's SQL over its ClickHouse events is out of scope (docs/compatibility-v2.md): a root key allowed to read analytics
 * is told so with a 412 pointing to v1's analytics; any other caller gets the 403 it would get anyway.
 */
export default function v2AnalyticsGetVerifications(app: App) {
  app.post(
    '/v2/analytics.getVerifications',
    {
      schema: {
        ...v2Requires(
          'Not offered: always a 412 whose detail points to GET /v1/analytics.getVerifications, which serves verification counts',
          '`api.*.read_analytics` or `api.<apiId>.read_analytics`',
        ),
        body: Body({ query: Type.String({ minLength: 1, description: 'The SQL Unkey v2 would run; not run here.' }) }),
        response: v2Responses(Type.Array(Type.Object({}, { additionalProperties: true }))),
      },
    },
    async (req) => {
      if (!readsAnalytics(req.caller)) requirePermissions(req.caller, 'api.*.read_analytics');
      throw new AppError('state/precondition-failed', NOT_OFFERED);
    },
  );
}
