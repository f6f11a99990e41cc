import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { DIALECTS, world, type World } from '../helpers/harness.ts';
import { githubSigner } from '../helpers/github-scanning.ts';
import { CONTENT_TYPES, DEEP, HUGE_ARRAYS, MALFORMED_BODIES, STRINGS, WRONG_TYPES } from './hostile.ts';
import { Raw } from './json-text.ts';
import { tableCounter, violations } from './target.ts';

/**
 * The secret scanning route is outside the OpenAPI document (GitHub's interface, not a client's), so the
 * generic route fuzz does not reach it: this one does. Hostile bodies, signed or not, with any Content-Type:
 * never a 5xx, every non-2xx is the envelope, and nothing is written unless a signed report names a real key
 * (random text never does).
 */
const RUNS = Number(process.env.KEYHOLD_FUZZ_RUNS ?? 200);
const SEED = Number(process.env.KEYHOLD_FUZZ_SEED ?? 424242);
const PATH = '/secret-scanning/github';
const signer = githubSigner();

const text = (v: unknown): string => (v instanceof Raw ? v.text : (JSON.stringify(v) ?? 'null'));
const any = <T>(values: readonly T[]) => fc.constantFrom(...values);

const item = fc.record(
  {
    token: fc.oneof(fc.string(), any(STRINGS), any(WRONG_TYPES)),
    type: fc.oneof(fc.string(), any(WRONG_TYPES)),
    url: fc.oneof(fc.webUrl(), any(STRINGS)),
    source: fc.oneof(fc.string(), any(WRONG_TYPES)),
  },
  { requiredKeys: [] },
);
const body = fc.oneof(
  fc.array(item, { maxLength: 5 }).map(text),
  any(MALFORMED_BODIES),
  any([...DEEP, ...HUGE_ARRAYS]).map(text),
  fc.jsonValue({ maxDepth: 3 }).map(text),
);
const headers = fc.record({
  contentType: fc.oneof({ weight: 4, arbitrary: fc.constant<string | undefined>('application/json') }, any(CONTENT_TYPES)),
  signature: fc.constantFrom('valid', 'none', 'stranger', 'garbage', 'unknown-id'),
});

for (const dialect of DIALECTS) {
  describe(`fuzz: POST ${PATH} (${dialect})`, () => {
    let w: World;
    before(async () => {
      w = await world(dialect, {
        app: { leaks: { action: 'disable', github: { keysFile: signer.file, keysUrl: 'http://127.0.0.1:9/' } } },
      });
    });
    after(() => w.close());

    test(`${RUNS} hostile reports`, async () => {
      const counts = tableCounter(w);
      const stranger = githubSigner('stranger');
      let address = 0;
      await fc.assert(
        fc.asyncProperty(body, headers, async (payload, h) => {
          const signed = signer.headers(payload);
          const sent: Record<string, string> = h.contentType === undefined ? {} : { 'content-type': h.contentType };
          if (h.signature !== 'none') {
            sent['github-public-key-identifier'] = h.signature === 'unknown-id' ? 'nope' : signer.identifier;
            sent['github-public-key-signature'] =
              h.signature === 'stranger'
                ? stranger.headers(payload)['github-public-key-signature']
                : h.signature === 'garbage'
                  ? '%%%'
                  : signed['github-public-key-signature'];
          }
          const since = Date.now();
          const beforeCounts = await counts(since);
          // A fresh address per case: the per-address limit is tested on its own.
          const res = await w.app.inject({
            method: 'POST',
            url: PATH,
            headers: sent,
            payload,
            remoteAddress: `10.0.${address >> 8}.${address++ & 255}`,
          });
          const problems = violations({ status: res.statusCode, headers: res.headers, body: res.body }, beforeCounts, await counts(since));
          if (res.statusCode < 300) {
            const changed = Object.entries(await counts(since)).filter(([t, n]) => beforeCounts[t] !== n);
            if (changed.length) problems.push(`a report of no real key wrote ${changed.map(([t]) => t).join(', ')}`);
          }
          if (h.signature !== 'valid' && res.statusCode === 200) problems.push('an unsigned or forged report was accepted');
          assert.deepEqual(problems, [], `${res.statusCode} ${res.body.slice(0, 300)} for ${payload.slice(0, 200)}`);
        }),
        { numRuns: RUNS, seed: SEED },
      );
    });
  });
}
