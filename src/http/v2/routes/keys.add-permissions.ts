import { permissionsRoute } from '../key-links.ts';

/** keys.addPermissions: answers with every direct permission of the key afterwards. */
export default permissionsRoute(
  'add',
  'Connect permissions to a key directly, by slug; ones already connected stay, missing slugs are created (atomic)',
  '`rbac.*.add_permission_to_key`; plus `rbac.*.create_permission` when a slug does not exist',
);
