import { resolve } from 'node:path';

/** GitHub's public keys for secret scanning alerts (the document KEYHOLD_GITHUB_SECRET_SCANNING_KEYS_URL names by default). */
export const GITHUB_SECRET_SCANNING_KEYS_URL = 'https://api.github.com/meta/public_keys/secret_scanning';

export const LEAKED_KEY_ACTIONS = ['disable', 'delete', 'notify'] as const;
/** What happens to a key reported as leaked: disabled, deleted, or only recorded (root keys are always revoked). */
export type LeakedKeyAction = (typeof LEAKED_KEY_ACTIONS)[number];

/** Leak detection settings (docs/leaked-keys.md). */
export interface LeakConfig {
  /** KEYHOLD_LEAKED_KEY_ACTION: applied to a key reported by GitHub or by `keyhold keys scan --report`. */
  action: LeakedKeyAction;
  /** KEYHOLD_SECRET_SCANNING=github: where GitHub's signing keys come from; unset: no partner endpoint. */
  github?: { keysFile?: string; keysUrl: string };
}

/** KEYHOLD_SECRET_SCANNING, KEYHOLD_GITHUB_SECRET_SCANNING_KEYS_FILE / _URL and KEYHOLD_LEAKED_KEY_ACTION, validated. */
export function leakConfigFrom(env: NodeJS.ProcessEnv, problems: string[]): LeakConfig {
  const action = (env.KEYHOLD_LEAKED_KEY_ACTION ?? '').trim() || 'disable';
  if (!(LEAKED_KEY_ACTIONS as readonly string[]).includes(action)) {
    problems.push(`KEYHOLD_LEAKED_KEY_ACTION must be ${LEAKED_KEY_ACTIONS.join(', ')}, got "${action}"`);
  }
  const scanning = (env.KEYHOLD_SECRET_SCANNING ?? '').trim();
  if (scanning !== '' && scanning !== 'off' && scanning !== 'github') {
    problems.push(`KEYHOLD_SECRET_SCANNING must be github or off, got "${scanning}"`);
  }
  const keysFile = (env.KEYHOLD_GITHUB_SECRET_SCANNING_KEYS_FILE ?? '').trim() || undefined;
  const keysUrl = (env.KEYHOLD_GITHUB_SECRET_SCANNING_KEYS_URL ?? '').trim() || GITHUB_SECRET_SCANNING_KEYS_URL;
  if (!/^https?:\/\/[^\s]+$/.test(keysUrl) || !URL.canParse(keysUrl)) {
    problems.push(`KEYHOLD_GITHUB_SECRET_SCANNING_KEYS_URL must be an http(s) URL, got "${keysUrl}"`);
  }
  return {
    action: action as LeakedKeyAction,
    ...(scanning === 'github' ? { github: { keysFile: keysFile && resolve(keysFile), keysUrl } } : {}),
  };
}

/** KEYHOLD_LEAKED_KEY_ACTION alone, for the CLI (`keyhold keys scan --report`). */
export function loadLeakedKeyAction(env: NodeJS.ProcessEnv = process.env): LeakedKeyAction {
  const problems: string[] = [];
  const { action } = leakConfigFrom({ KEYHOLD_LEAKED_KEY_ACTION: env.KEYHOLD_LEAKED_KEY_ACTION }, problems);
  if (problems.length) throw new Error(problems.join('\n'));
  return action;
}
