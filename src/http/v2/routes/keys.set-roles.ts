import { rolesRoute } from '../key-links.ts';

/** keys.setRoles: answers with the key's roles, now exactly the listed ones. */
export default rolesRoute(
  'set',
  "Make a key's roles exactly these names (`[]`: none); an unknown name is a 404 and changes nothing (atomic)",
  '`rbac.*.add_role_to_key`',
);
