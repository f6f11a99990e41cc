import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join, resolve } from 'node:path';
import { ConfigError, DEFAULT_AUTH_FAILURE_LIMIT, loadConfig } from '../src/config.ts';

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
