import { Type } from '@sinclair/typebox';
import { listAuditLogsFor } from '../../../services/audit/list-audit-logs.ts';
import type { App, Deps } from '../../types.ts';
import { Meta, requires, responses, Bounded } from '../../schemas/common.ts';

export default function auditListLogs(app: App, deps: Deps) {
  app.get(
    '/v1/audit.listLogs',
    {
      schema: {
        ...requires("List the workspace's audit records, newest first", '`api.*.read_audit`'),
        querystring: Type.Object({
          limit: Type.Integer({ minimum: 1, maximum: 100, default: 100 }),
          cursor: Type.Optional(Type.String({ minLength: 1, description: 'The `cursor` of the previous page.' })),
          event: Type.Optional(Type.String({ minLength: 1, description: 'Only this event, e.g. key.create.' })),
          targetId: Type.Optional(Type.String({ minLength: 1, description: 'Only records about this resource id.' })),
          since: Type.Optional(Bounded('timestamp', { description: 'Epoch ms, inclusive.' })),
          until: Type.Optional(Bounded('timestamp', { description: 'Epoch ms, exclusive.' })),
        }),
        response: responses(
          Type.Object({
            logs: Type.Array(
              Type.Object({
                id: Type.String(),
                time: Type.Integer(),
                event: Type.String(),
                actor: Type.Object({ type: Type.String(), id: Type.String() }),
                target: Type.Object({ type: Type.String(), id: Type.String() }),
                requestId: Type.Optional(Type.String()),
                description: Type.Optional(Type.String()),
                diff: Type.Optional(Meta),
              }),
            ),
            cursor: Type.Optional(Type.String({ description: 'Present when older records remain.' })),
          }),
        ),
      },
    },
    (req) => listAuditLogsFor(deps.store.db, req.caller, req.query),
  );
}
