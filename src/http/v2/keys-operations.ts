import type { App, Deps } from '../types.ts';
import v2KeysCreateKey from './routes/keys.create-key.ts';
import v2KeysGetKey from './routes/keys.get-key.ts';
import v2KeysWhoami from './routes/keys.whoami.ts';
import v2KeysUpdateKey from './routes/keys.update-key.ts';
import v2KeysUpdateCredits from './routes/keys.update-credits.ts';
import v2KeysDeleteKey from './routes/keys.delete-key.ts';
import v2KeysAddPermissions from './routes/keys.add-permissions.ts';
import v2KeysRemovePermissions from './routes/keys.remove-permissions.ts';
import v2KeysSetPermissions from './routes/keys.set-permissions.ts';
import v2KeysAddRoles from './routes/keys.add-roles.ts';
import v2KeysRemoveRoles from './routes/keys.remove-roles.ts';
import v2KeysSetRoles from './routes/keys.set-roles.ts';
import v2KeysRerollKey from './routes/keys.reroll-key.ts';
import v2KeysVerifyKey from './routes/keys.verify-key.ts';
import v2KeysMigrateKeys from './routes/keys.migrate-keys.ts';

/** The v2 keys.* operations (one file each under routes/), registered in this order. */
export const KEYS_V2: Array<(app: App, deps: Deps) => void> = [
  v2KeysCreateKey,
  v2KeysGetKey,
  v2KeysWhoami,
  v2KeysUpdateKey,
  v2KeysUpdateCredits,
  v2KeysDeleteKey,
  v2KeysAddPermissions,
  v2KeysRemovePermissions,
  v2KeysSetPermissions,
  v2KeysAddRoles,
  v2KeysRemoveRoles,
  v2KeysSetRoles,
  v2KeysRerollKey,
  v2KeysVerifyKey,
  v2KeysMigrateKeys,
];
