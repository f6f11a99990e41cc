import { rolesRoute } from '../key-links.ts';

/** keys.removeRoles: answers with the roles the key keeps. */
export default rolesRoute(
  'remove',
  'Disconnect roles from a key, by name; ones not connected are ignored, an unknown name is a 404 (atomic)',
  '`rbac.*.remove_role_from_key`',
);
