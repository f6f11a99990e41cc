import type { App, Deps } from '../types.ts';
import liveness from './liveness.ts';
import apisCreateApi from './apis.create-api.ts';
import apisGetApi from './apis.get-api.ts';
import apisListKeys from './apis.list-keys.ts';
import apisDeleteApi from './apis.delete-api.ts';
import keysCreateKey from './keys.create-key.ts';
import keysGetKey from './keys.get-key.ts';
import keysDeleteKey from './keys.delete-key.ts';
import keysWhoami from './keys.whoami.ts';
import keysSetRoles from './keys.set-roles.ts';

/** Every operation, registered in this order. */
export const ROUTES: Array<(app: App, deps: Deps) => void> = [
  liveness,
  apisCreateApi, apisGetApi, apisListKeys, apisDeleteApi,
  keysCreateKey, keysGetKey, keysDeleteKey, keysWhoami, keysSetRoles,
];
