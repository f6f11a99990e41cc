/** Root-key permission grammar (docs/api-reference.md): `<type>.<resourceId|*>.<action>`, or the single `*`. */
export const ACTIONS = {
  api: [
    'read_api',
    'create_api',
    'update_api',
    'delete_api',
    'create_key',
    'read_key',
    'update_key',
    'delete_key',
    'encrypt_key',
    'decrypt_key',
    'verify_key',
    'read_analytics',
    'read_audit',
  ],
  rbac: [
    'create_role',
    'read_role',
    'delete_role',
    'create_permission',
    'read_permission',
    'delete_permission',
    'add_role_to_key',
    'remove_role_from_key',
    'add_permission_to_key',
    'remove_permission_from_key',
  ],
  identity: ['create_identity', 'read_identity', 'update_identity', 'delete_identity'],
  ratelimit: [
    'create_namespace',
    'read_namespace',
    'delete_namespace',
    'limit',
    'set_override',
    'read_override',
    'delete_override',
    'read_analytics',
  ],
  webhook: ['create_endpoint', 'read_endpoint', 'update_endpoint', 'delete_endpoint'],
  usage: ['create_export', 'read_export', 'update_export', 'delete_export'],
} as const satisfies Record<string, readonly string[]>;

export type ResourceType = keyof typeof ACTIONS;

const RESOURCE_ID_RE = /^(\*|[A-Za-z0-9_\-:]{1,128})$/;

/** Why `permission` is not a grantable permission string, or null when it is. */
export function permissionProblem(permission: string): string | null {
  if (permission === '*') return null;
  const parts = permission.split('.');
  if (parts.length !== 3) return `"${permission}" is not of the form <type>.<resourceId|*>.<action> or "*"`;
  const [type, id, action] = parts;
  if (!Object.hasOwn(ACTIONS, type)) return `"${permission}": unknown resource type "${type}" (one of ${Object.keys(ACTIONS).join(', ')})`;
  if (!RESOURCE_ID_RE.test(id)) return `"${permission}": resource id must be "*" or an identifier`;
  const actions: readonly string[] = ACTIONS[type as ResourceType];
  if (!actions.includes(action)) return `"${permission}": unknown action "${action}" for type "${type}"`;
  return null;
}

/**
 * Whether a held set grants `required` (a concrete `type.id.action` or `type.*.action`):
 * `*` grants everything, `type.*.action` grants that action on any id, otherwise matching is exact.
 */
export function grants(held: ReadonlySet<string>, required: string): boolean {
  if (held.has('*') || held.has(required)) return true;
  const [type, , action] = required.split('.');
  return held.has(`${type}.*.${action}`);
}
