import { Type } from '@sinclair/typebox';
import { listExports } from '../../../services/usage/exports.ts';
import type { App, Deps } from '../../types.ts';
import { requires, responses } from '../../schemas/common.ts';
import { UsageExport } from '../../schemas/usage.ts';

export default function usageListExports(app: App, deps: Deps) {
  app.get(
    '/v1/usage.listExports',
    {
      schema: {
        ...requires('List the usage exports of the workspace (never their tokens)', '`usage.<exportId>.read_export`'),
        response: responses(Type.Object({ exports: Type.Array(UsageExport) })),
      },
    },
    (req) => listExports(deps.store.db, req.caller),
  );
}
