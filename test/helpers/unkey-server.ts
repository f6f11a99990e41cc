import { buildApp } from '../../src/app.ts';
import { createVault } from '../../src/crypto/vault.ts';
import type { Store } from '../../src/store/store.ts';
import { createWorkspace } from '../../src/services/workspaces/workspaces.ts';
import { insertRootKey } from '../../src/services/workspaces/root-keys.ts';
import { freshStore, OPERATOR } from './harness.ts';

/** A Keyhold server listening on a loopback port, for clients that need a base URL (Unkey's SDKs). */
export interface KeyholdServer {
  /** `http://127.0.0.1:<port>`: what the SDKs take as `baseUrl`. */
  baseUrl: string;
  store: Store;
  workspaceId: string;
  /** A `*` root key of `workspaceId`. */
  root: string;
  /** A new root key of `workspaceId` with these permissions. */
  rootKey(permissions: string[]): Promise<string>;
  close(): Promise<void>;
}

/**
 * A fresh store of `dialect`, the app on it listening on 127.0.0.1 (port chosen by the OS), one workspace and its
 * `*` root key. `redisUrl` makes rate limits go through Redis, as a cluster's nodes do.
 */
export async function startKeyhold(dialect: 'sqlite' | 'postgres', opts: { redisUrl?: string } = {}): Promise<KeyholdServer> {
  const { store, close } = await freshStore(dialect);
  const app = await buildApp({ store }, { vault: createVault([{ id: 'test', key: Buffer.alloc(32, 7) }]), redisUrl: opts.redisUrl });
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  const { workspaceId } = await createWorkspace(store.db, 'unkey-compat', OPERATOR);
  const rootKey = async (permissions: string[]) => (await insertRootKey(store.db, { workspaceId, permissions }, OPERATOR)).rootKey;
  return {
    baseUrl: address,
    store,
    workspaceId,
    root: await rootKey(['*']),
    rootKey,
    async close() {
      await app.close();
      await close();
    },
  };
}
