import { Type } from '@sinclair/typebox';
import { listReports } from '../../../services/usage/reports.ts';
import { REPORT_STATUSES } from '../../../domain/usage-exports.ts';
import type { App, Deps } from '../../types.ts';
import { OneOf, PageQuery, requires, responses } from '../../schemas/common.ts';
import { ExportId, UsageReport } from '../../schemas/usage.ts';

export default function usageListReports(app: App, deps: Deps) {
  app.get(
    '/v1/usage.listReports',
    {
      schema: {
        ...requires(
          "List an export's reports (one per period with usage), newest first, with cursor pagination",
          '`usage.<exportId>.read_export`',
        ),
        querystring: Type.Composite([PageQuery, Type.Object({ exportId: ExportId, status: Type.Optional(OneOf(REPORT_STATUSES)) })]),
        response: responses(
          Type.Object({
            reports: Type.Array(UsageReport),
            cursor: Type.Optional(Type.String({ description: 'Present when another page exists.' })),
          }),
        ),
      },
    },
    (req) => listReports(deps.store.db, req.caller, req.query),
  );
}
