import { buildApp } from '../../src/app.ts';
import { createVault } from '../../src/crypto/vault.ts';
import { openStore } from '../../src/store/store.ts';
import { modelWorld, type ModelWorld } from './model-world.ts';

/**
 * A model world of two nodes sharing one store: the world's app, and a second app in this process on a second
 * opener of the same database (another PostgreSQL pool on the same schema, or another connection to the same
 * SQLite file), as a second server process would be. Each node has its own key cache; a change made through one
 * reaches the other through the change feed (polled every 200 ms) and, on PostgreSQL, NOTIFY.
 */
export async function clusterWorld(dialect: 'sqlite' | 'postgres'): Promise<ModelWorld> {
  const mw = await modelWorld(dialect);
  const store = openStore(mw.w.url);
  const app = await buildApp({ store }, { vault: createVault([{ id: 'test', key: Buffer.alloc(32, 7) }]) });
  mw.nodes.push({ name: 'node-2', app });
  const closeFirst = mw.close;
  mw.close = async () => {
    await app.close();
    await store.close();
    await closeFirst();
  };
  return mw;
}
