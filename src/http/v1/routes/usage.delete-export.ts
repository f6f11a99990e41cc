import { deleteExport } from '../../../services/usage/exports.ts';
import type { App, Deps } from '../../types.ts';
import { Body, requires, responses } from '../../schemas/common.ts';
import { ExportId } from '../../schemas/usage.ts';
import { Empty } from '../../schemas/webhooks.ts';

export default function usageDeleteExport(app: App, deps: Deps) {
  app.post(
    '/v1/usage.deleteExport',
    {
      schema: {
        ...requires('Delete a usage export and its reports (a report not yet sent is not sent)', '`usage.<exportId>.delete_export`'),
        body: Body({ exportId: ExportId }),
        response: responses(Empty),
      },
    },
    (req) => deleteExport(deps.store.db, req.caller, req.body),
  );
}
