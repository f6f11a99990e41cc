import { Type } from '@sinclair/typebox';
import { Body } from '../schemas/common.ts';
import { MAX_QUERY_BYTES } from '../../services/analytics/query/parse.ts';

/** `{query}`: one read-only SELECT in ClickHouse's dialect (its byte bound is checked by the service). */
export const AnalyticsQueryBody = Body({
  query: Type.String({
    minLength: 1,
    maxLength: MAX_QUERY_BYTES,
    description: 'One read-only SELECT over the public tables, in ClickHouse SQL (docs/analytics.md). At most 10 KB.',
  }),
});

/** The result rows: one object per row, keyed by column name (free-form, as Unkey answers). */
export const AnalyticsRows = Type.Array(Type.Object({}, { additionalProperties: true }));
