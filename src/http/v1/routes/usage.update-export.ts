import { updateExport } from '../../../services/usage/exports.ts';
import type { App, Deps } from '../../types.ts';
import { Body, requires, responses } from '../../schemas/common.ts';
import { UpdateExportProps } from '../../schemas/usage.ts';
import { Empty } from '../../schemas/webhooks.ts';

export default function usageUpdateExport(app: App, deps: Deps) {
  app.post(
    '/v1/usage.updateExport',
    {
      schema: {
        ...requires(
          'Update a usage export: absent members stay; destination, subject and period are fixed (another of those is another export)',
          '`usage.<exportId>.update_export`',
        ),
        body: Body(UpdateExportProps),
        response: responses(Empty),
      },
    },
    (req) => updateExport(deps.usage, req.caller, req.body),
  );
}
