import { permissionsRoute } from '../key-links.ts';

/** keys.removePermissions: answers with the direct permissions the key keeps. */
export default permissionsRoute(
  'remove',
  'Disconnect permissions from a key, by slug; ones not connected are ignored, unknown slugs are a 404 (atomic)',
  '`rbac.*.remove_permission_from_key`',
);
