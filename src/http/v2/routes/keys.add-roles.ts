import { rolesRoute } from '../key-links.ts';

/** keys.addRoles: answers with every role of the key afterwards. */
export default rolesRoute(
  'add',
  'Connect roles to a key, by name; ones already connected stay, an unknown name is a 404 (atomic)',
  '`rbac.*.add_role_to_key`',
);
