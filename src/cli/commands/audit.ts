import { listAuditLogs } from '../../services/audit/list-audit-logs.ts';
import { requireWorkspace } from '../../services/lookups.ts';
import { type CommandGroup, epochMsOption, integerOption, requiredOption, stringOption } from '../command.ts';

export const AUDIT_COMMANDS: CommandGroup = {
  'audit list': {
    summary: "Lists the workspace's audit records, newest first: every change with its actor, target, request id and diff.",
    options: {
      workspace: { type: 'string', required: true, value: 'W', description: 'the workspace whose records to list' },
      since: { type: 'string', value: 'MS', description: 'only records from this time on, in epoch milliseconds' },
      event: { type: 'string', value: 'E', description: 'only records of this event, e.g. root_key.create' },
      target: { type: 'string', value: 'ID', description: 'only records about this id' },
      limit: { type: 'string', value: 'N', description: 'at most N records, 1..1000 (default 100)' },
    },
    prints: '{"logs":[…]}',
    async run({ store }, values) {
      const workspaceId = requiredOption(values, 'workspace');
      const since = epochMsOption(values, 'since');
      const limit = integerOption(values, 'limit', 100, 1, 1000);
      await requireWorkspace(store.db, workspaceId);
      const { logs } = await listAuditLogs(store.db, workspaceId, {
        limit,
        since,
        event: stringOption(values, 'event'),
        targetId: stringOption(values, 'target'),
      });
      const text = logs
        .map((l) => `${new Date(l.time).toISOString()}  ${l.event}  ${l.target.type}:${l.target.id}  by ${l.actor.type}:${l.actor.id}`)
        .join('\n');
      return { json: { logs }, text: text || 'no audit records' };
    },
  },
};
