import { createRootKey, listRootKeys } from '../../services/workspaces/root-keys.ts';
import { revokeRootKey, setRootKeyPermissions } from '../../services/workspaces/root-key-changes.ts';
import { type CommandGroup, epochMsOption, requiredOption, stringOption } from '../command.ts';

export const ROOT_KEY_COMMANDS: CommandGroup = {
  'root-keys create': {
    summary: 'Creates a root key with these permissions, optionally expiring; its plaintext is printed once.',
    options: {
      workspace: { type: 'string', required: true, value: 'W', description: 'the workspace the root key acts in' },
      permission: {
        type: 'string',
        multiple: true,
        required: true,
        value: 'P',
        description: "a permission it grants, e.g. 'api.*.read_api'; quote a * for the shell",
      },
      name: { type: 'string', value: 'N', description: 'a name to tell it by' },
      'expires-at': { type: 'string', value: 'MS', description: 'when it expires, in epoch milliseconds; never when absent' },
    },
    prints: '{"rootKeyId","rootKey"}',
    async run({ store, actor }, values) {
      const expiresAt = epochMsOption(values, 'expires-at');
      const r = await createRootKey(
        store.db,
        {
          workspaceId: requiredOption(values, 'workspace'),
          permissions: values.permission as string[],
          name: stringOption(values, 'name'),
          expiresAt,
        },
        actor,
      );
      return { json: r, text: `root key ${r.rootKeyId} created; shown once:\n\n  ${r.rootKey}\n` };
    },
  },
  'root-keys revoke': {
    summary: 'Revokes a root key: it is refused from the next request on. Revoking twice is harmless.',
    options: { id: { type: 'string', required: true, value: 'RK', description: 'the id of the root key (rk_…)' } },
    prints: '{"rootKeyId","revokedAt"}',
    async run({ store, actor }, values) {
      const r = await revokeRootKey(store.db, requiredOption(values, 'id'), actor);
      return { json: r, text: `root key ${r.rootKeyId} revoked at ${new Date(r.revokedAt).toISOString()}` };
    },
  },
  'root-keys set-permissions': {
    summary: 'Replaces the permissions of a root key: running servers apply them from the next request (within 1 s).',
    options: {
      id: { type: 'string', required: true, value: 'RK', description: 'the id of the root key (rk_…)' },
      permission: {
        type: 'string',
        multiple: true,
        required: true,
        value: 'P',
        description: 'a permission it grants from now on (all others are removed); quote a * for the shell',
      },
    },
    prints: '{"rootKeyId","permissions"}',
    async run({ store, actor }, values) {
      const r = await setRootKeyPermissions(store.db, requiredOption(values, 'id'), values.permission as string[], actor);
      return { json: r, text: `root key ${r.rootKeyId} now grants: ${r.permissions.join(' ')}` };
    },
  },
  'root-keys list': {
    summary: "Lists a workspace's root keys: id, visible start, permissions, name, times. Never the keys themselves.",
    options: { workspace: { type: 'string', required: true, value: 'W', description: 'the workspace whose root keys to list' } },
    prints: '{"rootKeys":[…]}',
    async run({ store }, values) {
      const rootKeys = await listRootKeys(store.db, requiredOption(values, 'workspace'));
      const text = rootKeys
        .map((k) => `${k.rootKeyId}  ${k.start}…  ${k.revokedAt ? 'revoked' : 'active'}  ${k.name ?? ''}  ${k.permissions.join(' ')}`)
        .join('\n');
      return { json: { rootKeys }, text: text || 'no root keys' };
    },
  },
};
