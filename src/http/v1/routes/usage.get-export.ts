import { Type } from '@sinclair/typebox';
import { getExport } from '../../../services/usage/exports.ts';
import type { App, Deps } from '../../types.ts';
import { requires, responses } from '../../schemas/common.ts';
import { ExportId, UsageExport } from '../../schemas/usage.ts';

export default function usageGetExport(app: App, deps: Deps) {
  app.get(
    '/v1/usage.getExport',
    {
      schema: {
        ...requires('A usage export (never its token)', '`usage.<exportId>.read_export`'),
        querystring: Type.Object({ exportId: ExportId }),
        response: responses(UsageExport),
      },
    },
    (req) => getExport(deps.store.db, req.caller, req.query),
  );
}
