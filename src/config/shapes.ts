import { isIP } from 'node:net';

/*
 * The parsers every area of src/config/ shares (whole numbers, booleans), the error they all report, and the
 * checks of the settings that have a shape (HOST and the URLs: DATABASE_URL, REDIS_URL, KEYHOLD_PUBLIC_URL). Each problem names the setting and the fix; a URL that may hold a password is never quoted
 * (KEYHOLD_PUBLIC_URL only without its credentials). What the drivers would choke on later (a port that is not
 * a number, a % that is not an escape, a schema name no SQL may carry) is refused here, so that it is a
 * configuration error (exit 2) instead of a stack trace from inside the driver, with the password in it.
 */

/** What is wrong with a HOST value, or undefined: an IP address or a host name, without scheme or port (that is PORT). */
export function hostProblem(host: string): string | undefined {
  if (isIP(host) || /^[A-Za-z0-9]([A-Za-z0-9_-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9_-]*[A-Za-z0-9])?)*\.?$/.test(host)) return undefined;
  return `HOST must be an IP address or a host name, without scheme or port (the port is PORT), e.g. 127.0.0.1 or 0.0.0.0, got "${host}"`;
}

/** Settings that are invalid: `problems` holds one line per problem, each naming its setting and the fix. */
export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string | string[]) {
    const list = typeof problems === 'string' ? [problems] : problems;
    super(list.join('\n'));
    this.problems = list;
  }
}

const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** What is wrong with a DATABASE_URL value, or undefined. */
export function databaseUrlProblem(url: string): string | undefined {
  if (!/^(sqlite:.+|postgres(ql)?:\/\/.+)$/.test(url)) {
    return 'DATABASE_URL must be sqlite:<path> or postgres://user:password@host:5432/database';
  }
  if (url.startsWith('sqlite:')) return undefined;
  const shape = 'postgres://user:password@host:5432/database';
  const parsed = parseUrl('DATABASE_URL', url, shape);
  if (typeof parsed === 'string') return parsed;
  const schema = parsed.searchParams.get('schema');
  if (schema !== null && !SCHEMA_NAME.test(schema)) {
    return `DATABASE_URL must name a ?schema= of 1..63 letters, digits or _ (not starting with a digit), got "${schema}"`;
  }
  const prepared = parsed.searchParams.get('prepared_statements');
  if (prepared !== null && prepared !== 'on' && prepared !== 'off') {
    return `DATABASE_URL's ?prepared_statements= must be on or off, got "${prepared}"`;
  }
  return undefined;
}

/** What is wrong with a REDIS_URL value, or undefined. */
export function redisUrlProblem(url: string): string | undefined {
  const shape = 'redis://[user:password@]host[:port][/db] or rediss://…';
  if (!/^rediss?:\/\/./.test(url)) return `REDIS_URL must be a URL ${shape}`;
  const parsed = parseUrl('REDIS_URL', url, shape);
  if (typeof parsed === 'string') return parsed;
  if (!/^\/?\d{0,5}$/.test(parsed.pathname)) return 'REDIS_URL must give the database after the port as a number, e.g. redis://host:6379/0';
  return undefined;
}

/** The URL, or a problem naming `setting`: a port that is not 1..65535, a bad percent escape, anything else unparsable. */
function parseUrl(setting: string, url: string, shape: string): URL | string {
  const port = portOf(url);
  if (port !== undefined && !(/^\d{1,5}$/.test(port) && Number(port) >= 1 && Number(port) <= 65_535)) {
    return `${setting} must give the port as a number 1..65535, e.g. ${shape}`;
  }
  if (!URL.canParse(url)) {
    return `${setting} must be a valid URL, with @ : / ? # % in a user name or password percent-encoded (@ as %40), e.g. ${shape}`;
  }
  const parsed = new URL(url);
  for (const part of [parsed.username, parsed.password, parsed.pathname]) {
    try {
      decodeURIComponent(part);
    } catch {
      return `${setting} must percent-encode a % in its user name, password or path as %25`;
    }
  }
  return parsed;
}

/** The text after the host's last `:` in the URL's authority (undefined without one), read before any parser sees it. */
function portOf(url: string): string | undefined {
  const authority = /^[a-z]+:\/\/([^/?#]*)/i.exec(url)?.[1] ?? '';
  const hostPort = authority.slice(authority.lastIndexOf('@') + 1);
  const match = /^(?:\[[^\]]*\]|[^:[\]]*):(.*)$/.exec(hostPort);
  return match?.[1];
}

/** What is wrong with a KEYHOLD_PUBLIC_URL value, or undefined. */
export function publicUrlProblem(value: string): string | undefined {
  const url = URL.canParse(value) ? new URL(value) : undefined;
  // No path: the dashboard's links and its cookie live under /dashboard of the server's own origin.
  if (url && (url.protocol === 'http:' || url.protocol === 'https:') && url.pathname === '/' && !url.search && !url.hash) {
    if (!url.username && !url.password) return undefined;
  }
  return `KEYHOLD_PUBLIC_URL must be an http:// or https:// origin without path, credentials, query or fragment, got "${withoutCredentials(value)}"`;
}

/**
 * The secrets among setting values (the password of a URL, raw and decoded; each master key; the bootstrap root
 * key), for removing from any message a failed start prints. Shorter than 3 characters they would garble it.
 */
export function secretsIn(values: { urls: Array<string | undefined>; masterKeys?: string; rootKey?: string }): string[] {
  const secrets: string[] = [];
  for (const url of values.urls) {
    const authority = url ? (/^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i.exec(url)?.[1] ?? '') : '';
    const userinfo = authority.slice(0, Math.max(0, authority.lastIndexOf('@')));
    const password = userinfo.includes(':') ? userinfo.slice(userinfo.indexOf(':') + 1) : '';
    secrets.push(password, safeDecode(password));
  }
  for (const entry of (values.masterKeys ?? '').split(/[,\n]/)) secrets.push(entry.trim(), entry.slice(entry.indexOf(':') + 1).trim());
  secrets.push(values.rootKey ?? '');
  return [...new Set(secrets)].filter((s) => s.length >= 3).sort((a, b) => b.length - a.length);
}

/** `decodeURIComponent`, or the text as it is when it is not valid percent-encoding. */
export const safeDecode = (text: string): string => {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
};

/** A URL as it may be quoted in a message: its user name and password replaced by `***`. */
export function withoutCredentials(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#]*@/i, '$1***@');
}

/**
 * A setting that is a whole number in `min..max` (unset or empty: `fallback`); anything else adds
 * "`name` must be `what`, min..max" to `problems` and gives `fallback`.
 */
export function wholeNumberFrom(
  env: NodeJS.ProcessEnv,
  name: string,
  fallback: number,
  range: { min: number; max: number },
  what: string,
  problems: string[],
): number {
  const value = (env[name] ?? '').trim();
  if (value === '') return fallback;
  if (!/^\d{1,15}$/.test(value) || Number(value) < range.min || Number(value) > range.max) {
    problems.push(`${name} must be ${what}, ${range.min}..${range.max}, got "${value}"`);
    return fallback;
  }
  return Number(value);
}

/** `true`/`false` (any case, also `1`/`0`); unset or empty: `fallback`. */
export function booleanFrom(env: NodeJS.ProcessEnv, name: string, fallback: boolean, problems: string[]): boolean {
  const value = (env[name] ?? '').trim().toLowerCase();
  if (value === '') return fallback;
  if (value === 'true' || value === '1') return true;
  if (value === 'false' || value === '0') return false;
  problems.push(`${name} must be true or false, got "${env[name]}"`);
  return fallback;
}
