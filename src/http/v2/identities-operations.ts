import type { App, Deps } from '../types.ts';
import v2IdentitiesCreateIdentity from './routes/identities.create-identity.ts';
import v2IdentitiesGetIdentity from './routes/identities.get-identity.ts';
import v2IdentitiesListIdentities from './routes/identities.list-identities.ts';
import v2IdentitiesUpdateIdentity from './routes/identities.update-identity.ts';
import v2IdentitiesDeleteIdentity from './routes/identities.delete-identity.ts';

/** The v2 identities.* operations (one file each under routes/), registered in this order. */
export const IDENTITIES_V2: Array<(app: App, deps: Deps) => void> = [
  v2IdentitiesCreateIdentity,
  v2IdentitiesGetIdentity,
  v2IdentitiesListIdentities,
  v2IdentitiesUpdateIdentity,
  v2IdentitiesDeleteIdentity,
];
