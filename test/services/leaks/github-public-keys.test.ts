import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { AppError } from '../../../src/domain/errors.ts';
import { GithubPublicKeys, KEYS_RELOAD_INTERVAL_MS } from '../../../src/services/leaks/github-public-keys.ts';
import { githubSigner, keysServer } from '../../helpers/github-scanning.ts';

describe("GitHub's secret scanning keys (cache and refetch)", () => {
  const signer = githubSigner();
  let server: Awaited<ReturnType<typeof keysServer>>;
  let failing = false;
  before(async () => {
    server = await keysServer(() => (failing ? 'not json' : signer.document));
  });
  after(() => server.close());

  test('loaded once; an unknown identifier refetches at most once a minute; a failed fetch is a 503, retried after a minute', async () => {
    let now = 1_000_000;
    const keys = new GithubPublicKeys({ keysUrl: server.url }, () => now);
    const fetched = server.requests();
    assert.ok(await keys.keyFor(signer.identifier));
    assert.ok(await keys.keyFor(signer.identifier));
    assert.equal(await keys.keyFor('unknown'), undefined);
    assert.equal(server.requests() - fetched, 1, 'one fetch for the first use, none for an unknown identifier within the minute');

    now += KEYS_RELOAD_INTERVAL_MS;
    assert.equal(await keys.keyFor('unknown'), undefined);
    assert.equal(server.requests() - fetched, 2, 'a minute later, an unknown identifier refetches');

    failing = true;
    now += KEYS_RELOAD_INTERVAL_MS;
    const unavailable = (e: unknown) => e instanceof AppError && e.kind === 'upstream/unavailable';
    await assert.rejects(keys.keyFor('unknown'), unavailable);
    await assert.rejects(keys.keyFor('unknown'), unavailable);
    assert.equal(server.requests() - fetched, 3, 'a failed fetch is not retried within the minute');
    assert.ok(await keys.keyFor(signer.identifier), 'known keys keep working meanwhile');

    failing = false;
    now += KEYS_RELOAD_INTERVAL_MS;
    assert.equal(await keys.keyFor('unknown'), undefined);
    assert.equal(server.requests() - fetched, 4);
  });

  test('concurrent first uses share one fetch', async () => {
    const keys = new GithubPublicKeys({ keysUrl: server.url });
    const fetched = server.requests();
    const found = await Promise.all(Array.from({ length: 10 }, () => keys.keyFor(signer.identifier)));
    assert.ok(found.every(Boolean));
    assert.equal(server.requests() - fetched, 1);
  });
});
