import { createWorkspace, listWorkspaces } from '../../services/workspaces/workspaces.ts';
import { type CommandGroup, requiredOption } from '../command.ts';

export const WORKSPACE_COMMANDS: CommandGroup = {
  'workspaces create': {
    summary: 'Creates a workspace.',
    options: { name: { type: 'string', required: true, value: 'N', description: 'the name of the workspace' } },
    prints: '{"workspaceId"}',
    async run({ store, actor }, values) {
      const r = await createWorkspace(store.db, requiredOption(values, 'name'), actor);
      return { json: r, text: `workspace ${r.workspaceId} created` };
    },
  },
  'workspaces list': {
    summary: 'Lists the workspaces, oldest first: id, name and when each was created.',
    options: {},
    prints: '{"workspaces":[{"workspaceId","name","createdAt"}…]}',
    async run({ store }) {
      const workspaces = await listWorkspaces(store.db);
      const text = workspaces.map((w) => `${w.workspaceId}  ${w.name}  created ${new Date(w.createdAt).toISOString()}`).join('\n');
      return { json: { workspaces }, text: text || 'no workspaces' };
    },
  },
};
