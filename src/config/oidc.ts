/**
 * OpenID Connect sign-in to the dashboard (KEYHOLD_OIDC_*), read by loadConfig: off unless KEYHOLD_OIDC_ISSUER
 * is set. The redirect URI is KEYHOLD_PUBLIC_URL + OIDC_CALLBACK_PATH.
 */
export interface OidcConfig {
  /** KEYHOLD_OIDC_ISSUER: the provider's issuer URL (https; http only on a loopback address). */
  issuer: string;
  /** KEYHOLD_OIDC_CLIENT_ID and KEYHOLD_OIDC_CLIENT_SECRET: this server as the provider's confidential client. */
  clientId: string;
  clientSecret: string;
  /** KEYHOLD_OIDC_SCOPES: default `openid email profile`; `openid` is always among them. */
  scopes: string;
  /** KEYHOLD_OIDC_OPERATOR_EMAILS: verified emails (lower-cased) that sign in as the operator. */
  operatorEmails: string[];
  /** KEYHOLD_OIDC_GROUPS_CLAIM (default `groups`) and KEYHOLD_OIDC_OPERATOR_GROUP: a group whose members are operators. */
  groupsClaim: string;
  operatorGroup?: string;
}

export const OIDC_CALLBACK_PATH = '/dashboard/oidc/callback';
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** The OIDC settings, or undefined when KEYHOLD_OIDC_ISSUER is unset; each problem names its setting and the fix. */
export function oidcFrom(env: NodeJS.ProcessEnv, problems: string[]): OidcConfig | undefined {
  const read = (name: string) => (env[name] ?? '').trim();
  const issuer = read('KEYHOLD_OIDC_ISSUER');
  const others = [
    'KEYHOLD_OIDC_CLIENT_ID',
    'KEYHOLD_OIDC_CLIENT_SECRET',
    'KEYHOLD_OIDC_SCOPES',
    'KEYHOLD_OIDC_OPERATOR_EMAILS',
    'KEYHOLD_OIDC_GROUPS_CLAIM',
    'KEYHOLD_OIDC_OPERATOR_GROUP',
  ];
  if (issuer === '') {
    const set = others.filter((n) => read(n) !== '');
    if (set.length) problems.push(`${set.join(', ')} set without KEYHOLD_OIDC_ISSUER: set the issuer too, or unset them`);
    return undefined;
  }
  let url: URL | undefined;
  try {
    url = new URL(issuer);
  } catch {}
  if (!url || !(url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK.has(url.hostname))) || url.search || url.hash) {
    problems.push(`KEYHOLD_OIDC_ISSUER must be the provider's https issuer URL (http only on a loopback address), got "${issuer}"`);
  }
  const clientId = read('KEYHOLD_OIDC_CLIENT_ID');
  const clientSecret = read('KEYHOLD_OIDC_CLIENT_SECRET');
  if (clientId === '')
    problems.push('KEYHOLD_OIDC_CLIENT_ID must be set with KEYHOLD_OIDC_ISSUER (the client id the provider gave this server)');
  // Never echo the secret.
  if (clientSecret === '') problems.push('KEYHOLD_OIDC_CLIENT_SECRET must be set with KEYHOLD_OIDC_ISSUER (the client secret)');
  const scopeList = (read('KEYHOLD_OIDC_SCOPES') || 'openid email profile').split(/\s+/);
  // RFC 6749 §3.3: a scope is printable ASCII without space, `"` or `\`.
  if (scopeList.some((scope) => !/^[\x21\x23-\x5B\x5D-\x7E]+$/.test(scope)))
    problems.push('KEYHOLD_OIDC_SCOPES must be scopes separated by spaces (printable ASCII without quotes or backslashes)');
  const scopes = [...new Set(['openid', ...scopeList])].join(' ');
  const operatorEmails = read('KEYHOLD_OIDC_OPERATOR_EMAILS')
    .split(',')
    .map((e) => e.trim().toLowerCase())
    .filter(Boolean);
  if (operatorEmails.some((e) => !/^[^\s@]+@[^\s@]+$/.test(e) || e.length > 254))
    problems.push('KEYHOLD_OIDC_OPERATOR_EMAILS must be email addresses separated by commas');
  const groupsClaim = read('KEYHOLD_OIDC_GROUPS_CLAIM') || 'groups';
  if (!/^\S{1,256}$/.test(groupsClaim)) problems.push('KEYHOLD_OIDC_GROUPS_CLAIM must be the name of an ID token claim, without spaces');
  const operatorGroup = read('KEYHOLD_OIDC_OPERATOR_GROUP') || undefined;
  return { issuer, clientId, clientSecret, scopes, operatorEmails, groupsClaim, operatorGroup };
}

/** The OIDC client secret, when set: never printed (config errors, logs). */
export const oidcSecrets = (env: NodeJS.ProcessEnv): string[] => {
  const secret = (env.KEYHOLD_OIDC_CLIENT_SECRET ?? '').trim();
  return secret.length >= 3 ? [secret] : [];
};
