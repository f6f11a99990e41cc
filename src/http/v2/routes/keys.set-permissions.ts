import { permissionsRoute } from '../key-links.ts';

/** keys.setPermissions: answers with the key's direct permissions, now exactly the listed ones. */
export default permissionsRoute(
  'set',
  "Make a key's direct permissions exactly these slugs (`[]`: none); missing slugs are created (atomic)",
  '`rbac.*.add_permission_to_key` and `rbac.*.remove_permission_from_key`; plus `rbac.*.create_permission` when a slug does not exist',
);
