import { listMembers, removeMember, setMember } from '../../services/dashboard/members.ts';
import { type CommandGroup, requiredOption } from '../command.ts';

const workspace = { type: 'string', required: true, value: 'W', description: 'the workspace' } as const;
const email = { type: 'string', required: true, value: 'E', description: 'the email the member signs in with (single sign-on)' } as const;

/** Dashboard members of a workspace: the same services as the dashboard's Members page. */
export const MEMBER_COMMANDS: CommandGroup = {
  'members list': {
    summary: 'Lists the dashboard members of a workspace: email and role (admin or viewer).',
    options: { workspace },
    prints: '{"members":[{"email","role","createdAt","updatedAt"}…]}',
    async run({ store }, values) {
      const members = await listMembers(store.db, requiredOption(values, 'workspace'));
      return { json: { members }, text: members.map((m) => `${m.email}  ${m.role}`).join('\n') || 'no members' };
    },
  },
  'members add': {
    summary: 'Adds a dashboard member to a workspace with a role, or changes the role of a member.',
    options: { workspace, email, role: { type: 'string', required: true, value: 'admin|viewer', description: 'what the member may do' } },
    prints: '{"created"}',
    async run({ store, actor }, values) {
      const input = {
        workspaceId: requiredOption(values, 'workspace'),
        email: requiredOption(values, 'email'),
        role: requiredOption(values, 'role'),
      };
      const r = await setMember(store.db, input, actor);
      return { json: r, text: `${input.email.trim().toLowerCase()} is ${r.created ? 'now a member' : 'a member'} as ${input.role}` };
    },
  },
  'members remove': {
    summary: "Removes a dashboard member from a workspace; the member's open sessions there end at once.",
    options: { workspace, email },
    prints: '{"removed"}',
    async run({ store, actor }, values) {
      await removeMember(store.db, { workspaceId: requiredOption(values, 'workspace'), email: requiredOption(values, 'email') }, actor);
      return { json: { removed: true }, text: 'member removed' };
    },
  },
};
