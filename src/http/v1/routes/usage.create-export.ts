import { Type } from '@sinclair/typebox';
import { createExport, createExportRules } from '../../../services/usage/exports.ts';
import type { App, Deps } from '../../types.ts';
import { Body, requires, responses } from '../../schemas/common.ts';
import { CreateExportProps } from '../../schemas/usage.ts';

export default function usageCreateExport(app: App, deps: Deps) {
  app.post(
    '/v1/usage.createExport',
    {
      schema: {
        ...requires(
          'Create a usage export: per identity (or key) and period, the verifications counted go to OpenMeter or Stripe',
          '`usage.*.create_export`',
        ),
        body: Body(CreateExportProps),
        response: responses(Type.Object({ exportId: Type.String() })),
      },
      config: { bodyRules: createExportRules },
    },
    (req) => createExport(deps.usage, req.caller, req.body),
  );
}
