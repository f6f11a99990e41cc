import { hashKey } from '../../crypto/keys.ts';
import type { Db } from '../../store/store.ts';
import type { LeakTarget } from './leaked-keys.ts';

/** What a token is, found by its hash in every workspace: a key (with its API) or a root key, and its state. */
export interface TokenMatch extends LeakTarget {
  apiId?: string;
  /** A key: live, disabled or deleted; a root key: live or revoked. */
  state: 'live' | 'disabled' | 'deleted' | 'revoked';
}

/** Hashes looked up per statement (within both dialects' bound-parameter limits). */
const HASHES_PER_QUERY = 500;

/**
 * The key or root key each token is, by its SHA-256 hash (Keyhold's own hash; a key still waiting for a lazy
 * rehash from another algorithm is not found until it is verified once). Tokens that are neither are absent.
 */
export async function lookUpTokens(db: Db, tokens: readonly string[]): Promise<Map<string, TokenMatch>> {
  const byHash = new Map(tokens.map((t) => [hashKey(t), t]));
  const hashes = [...byHash.keys()];
  const found = new Map<string, TokenMatch>();
  for (let i = 0; i < hashes.length; i += HASHES_PER_QUERY) {
    const chunk = hashes.slice(i, i + HASHES_PER_QUERY);
    const keys = await db
      .selectFrom('keys')
      .select(['id', 'workspace_id', 'api_id', 'hash', 'enabled', 'deleted_at'])
      .where('hash', 'in', chunk)
      .execute();
    for (const k of keys) {
      const state = k.deleted_at !== null ? 'deleted' : k.enabled ? 'live' : 'disabled';
      found.set(byHash.get(k.hash)!, { kind: 'key', id: k.id, workspaceId: k.workspace_id, apiId: k.api_id, state });
    }
    const roots = await db
      .selectFrom('root_keys')
      .select(['id', 'workspace_id', 'hash', 'revoked_at'])
      .where('hash', 'in', chunk)
      .execute();
    for (const r of roots) {
      const state = r.revoked_at !== null ? 'revoked' : 'live';
      found.set(byHash.get(r.hash)!, { kind: 'root_key', id: r.id, workspaceId: r.workspace_id, state });
    }
  }
  return found;
}
