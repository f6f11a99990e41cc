import { hash } from 'node:crypto';
import type { LeakedKeyAction } from '../../config/leaks.ts';
import type { Db } from '../../store/store.ts';
import type { Actor } from '../caller.ts';
import { markKeyLeaked, markRootKeyLeaked, type LeakSighting } from './leaked-keys.ts';
import { lookUpTokens, type TokenMatch } from './token-lookup.ts';

/** One token of a secret scanning report (GitHub's `{token, type, url, source}`). */
export interface ReportedToken {
  token: string;
  type: string;
  url?: string;
  source?: string;
}

/** GitHub's feedback for one reported token: whether it is a real secret of ours. */
export interface TokenFeedback {
  token_hash: string;
  token_type: string;
  label: 'true_positive' | 'false_positive';
}

/** The secret scanning partner, as audit records name it. */
export const GITHUB_SCANNING_ACTOR: Actor = { type: 'secret_scanning', id: 'github' };

/**
 * Handles a verified secret scanning report: every token that is a key of any workspace gets the leaked-key
 * action, every root key is revoked, each once however often it is reported (leaked-keys.ts). Answers GitHub's
 * feedback: `true_positive` for a token that is (or was) a Keyhold key or root key, `false_positive` otherwise.
 */
export async function reportLeakedTokens(
  db: Db,
  tokens: readonly ReportedToken[],
  opts: { action: LeakedKeyAction; actor?: Actor; requestId: string },
): Promise<TokenFeedback[]> {
  const matches = await lookUpTokens(
    db,
    tokens.map((t) => t.token),
  );
  const actor = opts.actor ?? GITHUB_SCANNING_ACTOR;
  const handled = new Set<string>();
  for (const t of tokens) {
    const match = matches.get(t.token);
    if (!match || handled.has(match.id)) continue;
    handled.add(match.id);
    await applyLeak(
      db,
      match,
      { url: t.url || 'unknown', source: t.source || 'unknown', type: t.type },
      opts.action,
      actor,
      opts.requestId,
    );
  }
  return tokens.map((t) => ({
    token_hash: hash('sha256', t.token, 'hex'),
    token_type: t.type,
    label: matches.has(t.token) ? 'true_positive' : 'false_positive',
  }));
}

/** The leaked-key action for a key, revocation for a root key; nothing for what is already deleted or revoked. */
export async function applyLeak(
  db: Db,
  match: TokenMatch,
  sighting: LeakSighting,
  action: LeakedKeyAction,
  actor: Actor,
  requestId: string,
): Promise<boolean> {
  if (match.kind === 'root_key') return markRootKeyLeaked(db, match, sighting, actor, requestId);
  if (match.state === 'deleted') return false;
  return markKeyLeaked(db, match, sighting, action, actor, requestId);
}
