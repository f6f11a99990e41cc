import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join, resolve } from 'node:path';
import { loadConfig, settingSecrets } from '../../src/config/config.ts';
import { DEFAULT_AUTH_FAILURE_LIMIT } from '../../src/config/server.ts';
import { ConfigError } from '../../src/config/shapes.ts';
import { MASTER_KEY_BYTES } from '../../src/config/master-keys.ts';
import { KEY_BYTES } from '../../src/crypto/aead.ts';

describe('config: operations settings', () => {
  test('the access log is off by default, on at LOG_LEVEL debug or trace, and KEYHOLD_ACCESS_LOG decides when set', () => {
    assert.equal(loadConfig({}).accessLog, false);
    assert.equal(loadConfig({ LOG_LEVEL: 'debug' }).accessLog, true);
    assert.equal(loadConfig({ LOG_LEVEL: 'trace' }).accessLog, true);
    assert.equal(loadConfig({ KEYHOLD_ACCESS_LOG: 'true' }).accessLog, true);
    assert.equal(loadConfig({ LOG_LEVEL: 'debug', KEYHOLD_ACCESS_LOG: 'false' }).accessLog, false);
    assert.throws(
      () => loadConfig({ KEYHOLD_ACCESS_LOG: 'sometimes' }),
      (err: Error) => err instanceof ConfigError && /KEYHOLD_ACCESS_LOG/.test(err.message),
    );
  });

  test('KEYHOLD_KEY_CACHE_SIZE: default, a count of keys, anything else refused', () => {
    assert.equal(loadConfig({}).keyCacheSize, 100_000);
    assert.equal(loadConfig({ KEYHOLD_KEY_CACHE_SIZE: '5000' }).keyCacheSize, 5_000);
    assert.equal(loadConfig({ KEYHOLD_KEY_CACHE_SIZE: '10000000' }).keyCacheSize, 10_000_000);
    for (const bad of ['0', '-1', '1e5', 'lots', '10000001'])
      assert.throws(() => loadConfig({ KEYHOLD_KEY_CACHE_SIZE: bad }), /KEYHOLD_KEY_CACHE_SIZE must be the number of keys/, bad);
  });

  test('KEYHOLD_AUTH_FAILURE_LIMIT: default, 0 for none, anything else refused', () => {
    assert.equal(loadConfig({}).authFailureLimit, DEFAULT_AUTH_FAILURE_LIMIT);
    assert.equal(loadConfig({ KEYHOLD_AUTH_FAILURE_LIMIT: '0' }).authFailureLimit, 0);
    assert.equal(loadConfig({ KEYHOLD_AUTH_FAILURE_LIMIT: '20' }).authFailureLimit, 20);
    assert.throws(() => loadConfig({ KEYHOLD_AUTH_FAILURE_LIMIT: '-1' }), /KEYHOLD_AUTH_FAILURE_LIMIT/);
  });

  test('the bootstrap key file: beside the SQLite database, ./data for PostgreSQL, or KEYHOLD_BOOTSTRAP_KEY_FILE', () => {
    assert.equal(loadConfig({}).bootstrapKeyFile, resolve('data', 'bootstrap-root-key'));
    assert.equal(loadConfig({ DATABASE_URL: 'sqlite:/srv/kh/db.sqlite' }).bootstrapKeyFile, '/srv/kh/bootstrap-root-key');
    assert.equal(loadConfig({ DATABASE_URL: 'postgres://u@h/db' }).bootstrapKeyFile, resolve('data', 'bootstrap-root-key'));
    assert.equal(loadConfig({ KEYHOLD_BOOTSTRAP_KEY_FILE: '/run/secrets/kh' }).bootstrapKeyFile, join('/run/secrets', 'kh'));
  });

  test('REDIS_URL must be a redis URL', () => {
    assert.equal(loadConfig({ REDIS_URL: 'redis://:pw@cache:6379/2' }).redisUrl, 'redis://:pw@cache:6379/2');
    for (const bad of ['http://cache', 'redis://[oops', 'cache:6379'])
      assert.throws(() => loadConfig({ REDIS_URL: bad }), /REDIS_URL must be/);
  });
});

describe('config: the secrets a failed start removes from what it prints', () => {
  test('URL passwords (raw and decoded), every master key, the bootstrap root key; nothing else', () => {
    const key = 'q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq80=';
    const secrets = settingSecrets({
      DATABASE_URL: 'postgres://app:p%40ss-w0rd@db:5432/keyhold',
      REDIS_URL: 'redis://:r3dis-pw@cache:6379/0',
      KEYHOLD_MASTER_KEYS: `k2:${key}, k1:${key.replace('q', 'Q')}`,
      KEYHOLD_BOOTSTRAP_ROOT_KEY: 'kh_root_3ZbW5yMnmGGRw3dQ3ZbW5yMn',
      HOST: '127.0.0.1',
    });
    for (const s of ['p%40ss-w0rd', 'p@ss-w0rd', 'r3dis-pw', key, key.replace('q', 'Q'), 'kh_root_3ZbW5yMnmGGRw3dQ3ZbW5yMn']) {
      assert.ok(secrets.includes(s), s);
    }
    assert.equal(secrets.includes('127.0.0.1'), false);
    assert.equal(secrets.includes('app'), false, 'a user name is no secret');
    assert.deepEqual(settingSecrets({ DATABASE_URL: 'sqlite:./data/keyhold.db', REDIS_URL: 'redis://cache:6379' }), []);
  });
});

describe('config: settings with a shape', () => {
  test('HOST, PORT, DATABASE_URL and REDIS_URL accept the usual forms', () => {
    for (const HOST of ['127.0.0.1', '0.0.0.0', '::', '::1', 'localhost', 'keys-1.internal.example.com'])
      assert.equal(loadConfig({ HOST }).host, HOST);
    for (const PORT of ['0', '8080', '65535']) assert.equal(loadConfig({ PORT }).port, Number(PORT));
    for (const DATABASE_URL of [
      'sqlite:./data/keyhold.db',
      'sqlite::memory:',
      'postgres://u@h/db',
      'postgresql://u:p%40ss@h:5432/db?schema=keyhold_1&sslmode=require',
      'postgres://u:p@[::1]:5432/db',
      'postgres:///db',
      'postgres://u@h/db?schema=kh&prepared_statements=off',
    ])
      assert.equal(loadConfig({ DATABASE_URL }).databaseUrl, DATABASE_URL);
    for (const REDIS_URL of ['redis://cache', 'redis://cache:6379/', 'rediss://default:p%25w@cache:6380/3', 'redis://[::1]:6379/2'])
      assert.equal(loadConfig({ REDIS_URL }).redisUrl, REDIS_URL);
  });

  test('each bad shape is one problem naming its setting, never quoting a password', () => {
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ HOST: 'http://0.0.0.0' }, /^HOST must be an IP address or a host name/],
      [{ HOST: '0.0.0.0:8080' }, /^HOST must be/],
      [{ PORT: '1e3' }, /^PORT must be a whole number/],
      [{ DATABASE_URL: 'postgres://u:pw-1@h:99999/db' }, /^DATABASE_URL must give the port as a number 1\.\.65535/],
      [{ DATABASE_URL: 'postgres://u:pw-1@h:/db' }, /^DATABASE_URL must give the port/],
      [{ DATABASE_URL: 'postgres://u:pw-1%@h/db' }, /^DATABASE_URL must percent-encode a %/],
      [{ DATABASE_URL: 'postgres://u:pw-1@h/db?schema=1abc' }, /^DATABASE_URL must name a \?schema=/],
      [{ DATABASE_URL: 'postgres://u:pw-1@h/db?prepared_statements=no' }, /^DATABASE_URL's \?prepared_statements= must be on or off/],
      [{ REDIS_URL: 'redis://:pw-1@h:0' }, /^REDIS_URL must give the port/],
      [{ REDIS_URL: 'redis://:pw-1@h/x' }, /^REDIS_URL must give the database after the port as a number/],
      [
        { KEYHOLD_PUBLIC_URL: 'https://u:pw-1@keys.example.com' },
        /^KEYHOLD_PUBLIC_URL must be .*got "https:\/\/\*\*\*@keys\.example\.com"$/,
      ],
    ];
    for (const [env, expected] of cases) {
      assert.throws(
        () => loadConfig(env),
        (err: Error) => {
          assert.ok(err instanceof ConfigError);
          assert.equal(err.problems.length, 1, err.message);
          assert.match(err.problems[0], expected);
          assert.equal(err.message.includes('pw-1'), false, err.message);
          return true;
        },
        JSON.stringify(env),
      );
    }
  });
});

describe('config: single sign-on settings', () => {
  const oidc = {
    KEYHOLD_OIDC_ISSUER: 'https://sso.example.com/realms/main',
    KEYHOLD_OIDC_CLIENT_ID: 'keyhold',
    KEYHOLD_OIDC_CLIENT_SECRET: 'top-secret-value',
  };
  test('off without an issuer; defaults for scopes and groups claim; emails lower-cased', () => {
    assert.equal(loadConfig({}).oidc, undefined);
    const config = loadConfig({ ...oidc, KEYHOLD_OIDC_OPERATOR_EMAILS: ' Ops@Example.com, b@example.com ,' }).oidc;
    assert.deepEqual(config, {
      issuer: oidc.KEYHOLD_OIDC_ISSUER,
      clientId: 'keyhold',
      clientSecret: 'top-secret-value',
      scopes: 'openid email profile',
      operatorEmails: ['ops@example.com', 'b@example.com'],
      groupsClaim: 'groups',
      operatorGroup: undefined,
    });
    assert.equal(loadConfig({ ...oidc, KEYHOLD_OIDC_SCOPES: 'email groups' }).oidc?.scopes, 'openid email groups');
    assert.equal(loadConfig({ ...oidc, KEYHOLD_OIDC_ISSUER: 'http://127.0.0.1:9000' }).oidc?.issuer, 'http://127.0.0.1:9000');
  });
  test('refused: plain http off loopback, a missing client id or secret, settings without an issuer; the secret never echoed', () => {
    for (const env of [
      { ...oidc, KEYHOLD_OIDC_ISSUER: 'http://sso.example.com' },
      { ...oidc, KEYHOLD_OIDC_CLIENT_ID: '' },
      { ...oidc, KEYHOLD_OIDC_CLIENT_SECRET: '' },
      { KEYHOLD_OIDC_CLIENT_SECRET: 'top-secret-value' },
    ]) {
      assert.throws(
        () => loadConfig(env),
        (err: unknown) => err instanceof ConfigError && /KEYHOLD_OIDC_/.test(err.message) && !err.message.includes('top-secret-value'),
        JSON.stringify(env),
      );
    }
    assert.ok(settingSecrets(oidc).includes('top-secret-value'));
  });
});

describe('config: KEYHOLD_MASTER_KEYS', () => {
  test("the master key length the setting asks for is the vault's key length", () => {
    assert.equal(MASTER_KEY_BYTES, KEY_BYTES);
  });
});
