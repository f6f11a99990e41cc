import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openStore } from '../../src/store/store.ts';
import { bootstrap } from '../../src/services/workspaces/workspaces.ts';
import { createVault } from '../../src/crypto/vault.ts';
import { parseMasterKeys } from '../../src/config/master-keys.ts';

/**
 * Bad values for every setting of the configuration table (docs/configuration.md), each started as a real server by
 * start-failures.test.ts. `env` gets the case's scratch directory (empty but for `data/`) and `db`, the SQLite URL
 * of a database in `data/` that the start uses unless `env` sets DATABASE_URL; `secrets` are values of `env`
 * that must appear nowhere in the output.
 */
export interface StartFailureCase {
  /** The setting the case is about: the line must name it. */
  setting: string;
  what: string;
  env: (dir: string, db: string) => Record<string, string>;
  /** 2: an invalid value; 1: a valid value that cannot be used. */
  code: 1 | 2;
  /** What the line says, beyond naming the setting. */
  line?: RegExp;
  secrets?: string[];
  /** Prepares the scratch directory (and the database `db`) before the start. */
  setup?: (dir: string, db: string) => unknown;
  /** PORT is set to a port that another socket of the test holds. */
  busyPort?: boolean;
  /** Also started through `npm start`, as an operator would. */
  alsoViaNpm?: boolean;
  /** Needs a service of the test environment (skipped without it). */
  needs?: 'redis';
}

const REDIS_URL = process.env.KEYHOLD_TEST_REDIS_URL;
const KEY = randomBytes(32).toString('base64');
const OTHER_KEY = randomBytes(32).toString('base64');

/** A database whose first workspace has a recoverable secret under master key `k1` (KEY). */
async function dataUnderK1(db: string): Promise<void> {
  const store = openStore(db);
  try {
    await store.migrate();
    const boot = await bootstrap(store.db, undefined);
    await createVault(parseMasterKeys(`k1:${KEY}`)).encrypt(store.db, boot!.workspaceId, ['a recoverable key']);
  } finally {
    await store.close();
  }
}

const invalidNumbers = (setting: string, values: string[]): StartFailureCase[] =>
  values.map((value) => ({ setting, what: `"${value}"`, env: () => ({ [setting]: value }), code: 2, line: /must be/ }));

export const START_FAILURE_CASES: StartFailureCase[] = [
  ...['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'].map(
    (setting): StartFailureCase => ({
      setting,
      what: 'not an http(s) URL',
      env: () => ({ [setting]: 'collector:4318' }),
      code: 2,
      line: /must be an http\(s\) URL/,
    }),
  ),
  { setting: 'OTEL_SDK_DISABLED', what: '"yes"', env: () => ({ OTEL_SDK_DISABLED: 'yes' }), code: 2, line: /must be true or false/ },
  {
    setting: 'OTEL_SERVICE_NAME',
    what: 'a control character',
    env: () => ({ OTEL_SERVICE_NAME: 'key\thold' }),
    code: 2,
    line: /control characters/,
  },
  {
    setting: 'OTEL_RESOURCE_ATTRIBUTES',
    what: 'a pair without =',
    env: () => ({ OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod,team' }),
    code: 2,
    line: /key=value pairs/,
  },
  {
    setting: 'HOST',
    what: 'a name that does not resolve',
    env: () => ({ HOST: 'no-such-host.invalid' }),
    code: 1,
    line: /does not resolve/,
  },
  { setting: 'HOST', what: 'not an address of this machine', env: () => ({ HOST: '192.0.2.1' }), code: 1, line: /not an address/ },
  { setting: 'HOST', what: 'with a port', env: () => ({ HOST: '127.0.0.1:8080' }), code: 2, line: /without scheme or port/ },
  ...invalidNumbers('PORT', ['65536', '0x1F90']),
  { setting: 'PORT', what: 'in use', env: () => ({}), busyPort: true, code: 1, line: /already in use/ },
  { setting: 'LOG_LEVEL', what: '"loud"', env: () => ({ LOG_LEVEL: 'loud' }), code: 2, line: /must be one of/ },
  ...invalidNumbers('KEYHOLD_ACCESS_LOG', ['sometimes']),
  ...invalidNumbers('KEYHOLD_KEY_CACHE_SIZE', ['0']),
  {
    setting: 'KEYHOLD_PUBLIC_URL',
    what: 'with credentials',
    env: () => ({ KEYHOLD_PUBLIC_URL: 'https://bob:pub-Secret-7@keys.example.com' }),
    code: 2,
    secrets: ['pub-Secret-7'],
  },
  { setting: 'KEYHOLD_PUBLIC_URL', what: 'with a path', env: () => ({ KEYHOLD_PUBLIC_URL: 'https://keys.example.com/x' }), code: 2 },
  ...invalidNumbers('KEYHOLD_AUTH_FAILURE_LIMIT', ['-1']),
  ...oidcCases(),
  {
    setting: 'DATABASE_URL',
    what: 'a port that is not a number (issue 20: the password in a stack trace)',
    env: () => ({ DATABASE_URL: 'postgres://alice:secret@127.0.0.1:notaport/keyhold' }),
    code: 2,
    line: /port as a number/,
    secrets: ['secret'],
    alsoViaNpm: true,
  },
  {
    setting: 'DATABASE_URL',
    what: 'a directory under /proc (issue 20: a silent hang at full CPU)',
    env: () => ({ DATABASE_URL: 'sqlite:/proc/nope/keyhold.db' }),
    code: 1,
    line: /\/proc\/nope cannot be created/,
    alsoViaNpm: true,
  },
  {
    setting: 'DATABASE_URL',
    what: 'another kind of database',
    env: () => ({ DATABASE_URL: 'mysql://u:my-Pass-3@h/db' }),
    code: 2,
    secrets: ['my-Pass-3'],
  },
  {
    setting: 'DATABASE_URL',
    what: 'a password with a bad % escape',
    env: () => ({ DATABASE_URL: 'postgres://alice:pa%zz-Word@127.0.0.1:5432/keyhold' }),
    code: 2,
    line: /%25/,
    secrets: ['pa%zz-Word'],
  },
  {
    setting: 'DATABASE_URL',
    what: 'an invalid schema name',
    env: () => ({ DATABASE_URL: 'postgres://alice:Schema-Pw9@127.0.0.1:5432/keyhold?schema=no-dash' }),
    code: 2,
    line: /\?schema=/,
    secrets: ['Schema-Pw9'],
  },
  {
    setting: 'DATABASE_URL',
    what: 'PostgreSQL unreachable',
    env: () => ({ DATABASE_URL: 'postgres://alice:Unreach-Pw1@127.0.0.1:1/keyhold' }),
    code: 1,
    line: /cannot reach PostgreSQL/,
    secrets: ['Unreach-Pw1'],
  },
  {
    setting: 'DATABASE_URL',
    what: 'a directory where the database file should be',
    setup: (dir) => mkdirSync(join(dir, 'db-dir'), { recursive: true }),
    env: (dir) => ({ DATABASE_URL: `sqlite:${join(dir, 'db-dir')}` }),
    code: 1,
    line: /cannot use the SQLite database/,
  },
  {
    setting: 'DATABASE_URL',
    what: 'a file that is not a database',
    setup: (dir) => writeFileSync(join(dir, 'not.db'), 'x'.repeat(4096)),
    env: (dir) => ({ DATABASE_URL: `sqlite:${join(dir, 'not.db')}` }),
    code: 1,
    line: /not a database/,
  },
  {
    setting: 'DATABASE_URL',
    what: 'a data directory inside a file',
    setup: (dir) => writeFileSync(join(dir, 'file'), ''),
    env: (dir) => ({ DATABASE_URL: `sqlite:${join(dir, 'file', 'keyhold.db')}` }),
    code: 1,
    line: /ENOTDIR/,
  },
  {
    setting: 'REDIS_URL',
    what: 'a port that is not a number',
    env: () => ({ REDIS_URL: 'redis://:Rpw-1x@127.0.0.1:notaport' }),
    code: 2,
    secrets: ['Rpw-1x'],
  },
  { setting: 'REDIS_URL', what: 'port 0', env: () => ({ REDIS_URL: 'redis://127.0.0.1:0' }), code: 2, line: /1\.\.65535/ },
  { setting: 'REDIS_URL', what: 'a database that is not a number', env: () => ({ REDIS_URL: 'redis://127.0.0.1:6379/abc' }), code: 2 },
  {
    setting: 'REDIS_URL',
    what: 'a password with a bad % escape',
    env: () => ({ REDIS_URL: 'redis://:Rp%zz9@127.0.0.1:6379' }),
    code: 2,
    secrets: ['Rp%zz9'],
  },
  { setting: 'REDIS_URL', what: 'not a redis URL', env: () => ({ REDIS_URL: 'http://127.0.0.1:6379' }), code: 2 },
  {
    setting: 'REDIS_URL',
    what: 'a database number Redis refuses',
    env: () => ({ REDIS_URL: `${REDIS_URL?.replace(/\/\d*$/, '')}/99` }),
    code: 1,
    line: /refused the connection/,
    needs: 'redis',
  },
  {
    setting: 'KEYHOLD_BOOTSTRAP_ROOT_KEY',
    what: 'malformed',
    env: () => ({ KEYHOLD_BOOTSTRAP_ROOT_KEY: 'kh_root_tooShort9' }),
    code: 2,
    secrets: ['kh_root_tooShort9'],
  },
  {
    setting: 'KEYHOLD_BOOTSTRAP_KEY_FILE',
    what: 'a directory',
    setup: (dir) => mkdirSync(join(dir, 'key-dir'), { recursive: true }),
    env: (dir) => ({ KEYHOLD_BOOTSTRAP_KEY_FILE: join(dir, 'key-dir') }),
    code: 1,
    line: /nothing was created/,
  },
  {
    setting: 'KEYHOLD_BOOTSTRAP_KEY_FILE',
    what: 'under /proc',
    env: () => ({ KEYHOLD_BOOTSTRAP_KEY_FILE: '/proc/nope/bootstrap-root-key' }),
    code: 1,
    line: /nothing was created/,
  },
  ...invalidNumbers('KEYHOLD_WORKERS', ['65']),
  {
    setting: 'KEYHOLD_MASTER_KEYS',
    what: 'a key of the wrong size',
    env: () => ({ KEYHOLD_MASTER_KEYS: `k1:${KEY.slice(0, 20)}` }),
    code: 2,
    secrets: [KEY.slice(0, 20)],
  },
  { setting: 'KEYHOLD_MASTER_KEYS', what: 'a bad id', env: () => ({ KEYHOLD_MASTER_KEYS: `bad id!:${KEY}` }), code: 2, secrets: [KEY] },
  {
    setting: 'KEYHOLD_MASTER_KEYS',
    what: 'without the master key the data was written with',
    setup: (_dir, db) => dataUnderK1(db),
    env: () => ({ KEYHOLD_MASTER_KEYS: `k2:${OTHER_KEY}` }),
    code: 1,
    line: /master key "k1", which is not configured/,
    secrets: [KEY, OTHER_KEY],
  },
  {
    setting: 'KEYHOLD_MASTER_KEYS',
    what: 'another key under the id the data was written with',
    setup: (_dir, db) => dataUnderK1(db),
    env: () => ({ KEYHOLD_MASTER_KEYS: `k1:${OTHER_KEY}` }),
    code: 1,
    line: /does not unwrap with master key "k1"/,
    secrets: [KEY, OTHER_KEY],
  },
  {
    setting: 'KEYHOLD_MASTER_KEYS',
    what: 'unset, with a corrupt master.key',
    setup: (dir) => writeFileSync(join(dir, 'data', 'master.key'), `k1:${KEY.slice(0, 30)}\n`, { mode: 0o600 }),
    env: () => ({}),
    code: 1,
    line: /master key file cannot be used/,
    secrets: [KEY.slice(0, 30)],
  },
  {
    setting: 'KEYHOLD_MASTER_KEYS',
    what: 'unset, with a directory as master.key',
    setup: (dir) => mkdirSync(join(dir, 'data', 'master.key'), { recursive: true }),
    env: () => ({}),
    code: 1,
    line: /EISDIR/,
  },
  ...invalidNumbers('KEYHOLD_ANALYTICS_RETENTION_DAYS', ['36501']),
  ...invalidNumbers('KEYHOLD_ANALYTICS_RAW_RETENTION_DAYS', ['-1']),
  ...invalidNumbers('KEYHOLD_ANALYTICS_MINUTE_RETENTION_DAYS', ['seven']),
  ...invalidNumbers('KEYHOLD_ANALYTICS_DAY_RETENTION_DAYS', ['36501']),
  {
    setting: 'KEYHOLD_ANALYTICS',
    what: '"sometimes"',
    env: () => ({ KEYHOLD_ANALYTICS: 'sometimes' }),
    code: 2,
    line: /must be on or off/,
  },
  {
    setting: 'KEYHOLD_REGION',
    what: 'a space in the name',
    env: () => ({ KEYHOLD_REGION: 'eu west' }),
    code: 2,
    line: /must be 1 to 64 letters/,
  },
  ...invalidNumbers('KEYHOLD_AUDIT_RETENTION_DAYS', ['1.5']),
  ...invalidNumbers('KEYHOLD_DELETED_RETENTION_DAYS', ['forever']),
  ...invalidNumbers('KEYHOLD_FINISHED_RETENTION_DAYS', ['99999']),
  ...invalidNumbers('KEYHOLD_PRUNE_INTERVAL_MINUTES', ['hourly']),
  ...invalidNumbers('KEYHOLD_SECRET_SCANNING', ['gitlab']),
  ...invalidNumbers('KEYHOLD_LEAKED_KEY_ACTION', ['revoke']),
  ...invalidNumbers('KEYHOLD_GITHUB_SECRET_SCANNING_KEYS_URL', ['ftp://example.com/keys']),
  {
    setting: 'KEYHOLD_GITHUB_SECRET_SCANNING_KEYS_FILE',
    what: 'a file that does not exist',
    env: (dir) => ({ KEYHOLD_SECRET_SCANNING: 'github', KEYHOLD_GITHUB_SECRET_SCANNING_KEYS_FILE: join(dir, 'no-such-keys.json') }),
    code: 1,
    line: /ENOENT/,
  },
  {
    setting: 'KEYHOLD_GITHUB_SECRET_SCANNING_KEYS_FILE',
    what: 'a file that is not the keys document',
    setup: (dir) => writeFileSync(join(dir, 'keys.json'), '{"public_keys":"no"}'),
    env: (dir) => ({ KEYHOLD_SECRET_SCANNING: 'github', KEYHOLD_GITHUB_SECRET_SCANNING_KEYS_FILE: join(dir, 'keys.json') }),
    code: 1,
    line: /no public_keys array/,
  },
  { setting: 'KEYHOLD_WEBHOOK_ALLOW_PRIVATE', what: 'not a boolean', env: () => ({ KEYHOLD_WEBHOOK_ALLOW_PRIVATE: 'yes' }), code: 2 },
  ...invalidNumbers('KEYHOLD_WEBHOOK_TIMEOUT_MS', ['0']),
  { setting: 'KEYHOLD_WEBHOOK_RETRY_SCHEDULE', what: 'not durations', env: () => ({ KEYHOLD_WEBHOOK_RETRY_SCHEDULE: '5,soon' }), code: 2 },
  ...invalidNumbers('KEYHOLD_USAGE_SETTLE_MS', ['-1', '86400001']),
];

/** Single sign-on settings: each bad value alone (with an otherwise complete configuration), or set without an issuer. */
function oidcCases(): StartFailureCase[] {
  const secret = 'oidc-Secret-9';
  const complete = {
    KEYHOLD_OIDC_ISSUER: 'https://sso.example.com',
    KEYHOLD_OIDC_CLIENT_ID: 'keyhold',
    KEYHOLD_OIDC_CLIENT_SECRET: secret,
  };
  const bad = (setting: string, what: string, env: Record<string, string>, line?: RegExp): StartFailureCase => ({
    setting,
    what,
    env: () => env,
    code: 2,
    line,
    secrets: [secret],
  });
  return [
    bad('KEYHOLD_OIDC_ISSUER', 'plain http off loopback', { ...complete, KEYHOLD_OIDC_ISSUER: 'http://sso.example.com' }, /https/),
    bad('KEYHOLD_OIDC_CLIENT_ID', 'missing', { ...complete, KEYHOLD_OIDC_CLIENT_ID: '' }, /must be set/),
    bad('KEYHOLD_OIDC_CLIENT_SECRET', 'missing', { ...complete, KEYHOLD_OIDC_CLIENT_SECRET: '' }, /must be set/),
    bad('KEYHOLD_OIDC_CLIENT_SECRET', 'without an issuer', { KEYHOLD_OIDC_CLIENT_SECRET: secret }, /without KEYHOLD_OIDC_ISSUER/),
    bad('KEYHOLD_OIDC_SCOPES', 'with a quote', { ...complete, KEYHOLD_OIDC_SCOPES: 'openid "email"' }),
    bad('KEYHOLD_OIDC_OPERATOR_EMAILS', 'not an email', { ...complete, KEYHOLD_OIDC_OPERATOR_EMAILS: 'ops@example.com,nobody' }),
    bad('KEYHOLD_OIDC_GROUPS_CLAIM', 'without an issuer', { KEYHOLD_OIDC_GROUPS_CLAIM: 'roles' }, /without KEYHOLD_OIDC_ISSUER/),
    bad('KEYHOLD_OIDC_OPERATOR_GROUP', 'without an issuer', { KEYHOLD_OIDC_OPERATOR_GROUP: 'ops' }, /without KEYHOLD_OIDC_ISSUER/),
  ];
}
