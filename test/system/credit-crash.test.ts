import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, freshStore } from '../helpers/harness.ts';
import { newRootKey, ServerProcess } from '../helpers/server-process.ts';

/**
 * Credits survive kill -9 in the middle of a burst of verifications. A real server (src/main.ts) takes
 * concurrent keys.verifyKey requests with costs 1..3 on a key with credits; after KILL_AFTER VALID answers it
 * is killed with SIGKILL while other requests are in flight, then restarted on the same database. The credits
 * spent (initial − remaining) are then:
 *
 *   spent ≥ the costs of the VALID answers received  (a VALID answer is sent only after its credits are committed)
 *   spent ≤ that + the costs of the requests in flight at the kill  (whose answers were lost with the connection)
 *
 * So the only loss allowed is in the caller's favour of the store: a credit may be spent whose VALID answer
 * was lost with the connection; never a VALID answer without its credit spent.
 */

const CREDITS = 1_000_000;
const CONCURRENCY = 48;
const KILL_AFTER = 300;

interface Ledger {
  /** Costs of VALID answers received. */
  confirmed: number;
  validAnswers: number;
  /** Costs of requests sent but never answered (the connection died with the server). */
  lost: number;
  lostRequests: number;
  /** Answers other than 200 VALID before the kill (there should be none). */
  unexpected: string[];
}

for (const dialect of DIALECTS) {
  describe(`credits across kill -9 of the server mid-burst (${dialect})`, () => {
    let db: Awaited<ReturnType<typeof freshStore>>;
    const servers: ServerProcess[] = [];
    const root = newRootKey();
    before(async () => {
      db = await freshStore(dialect);
    });
    after(async () => {
      for (const s of servers) await s.stop();
      await db.close();
    });

    test(`${CONCURRENCY} concurrent verifications, SIGKILL after ${KILL_AFTER} VALID answers: confirmed ≤ spent ≤ confirmed + in flight`, {
      timeout: 120_000,
    }, async (t) => {
      const first = await ServerProcess.start(db.url, root);
      servers.push(first);
      const api = await first.post<{ apiId: string }>('/v1/apis.createApi', { name: 'crash' }, root);
      assert.equal(api.status, 200, JSON.stringify(api.json));
      const created = await first.post<{ keyId: string; key: string }>(
        '/v1/keys.createKey',
        { apiId: api.json.apiId, remaining: CREDITS },
        root,
      );
      assert.equal(created.status, 200, JSON.stringify(created.json));
      const { keyId, key } = created.json;

      const ledger: Ledger = { confirmed: 0, validAnswers: 0, lost: 0, lostRequests: 0, unexpected: [] };
      let killing: Promise<void> | undefined;
      let inFlight = 0;
      let inFlightAtKill = 0;
      const loop = async (n: number) => {
        for (let i = 0; !killing; i++) {
          const cost = 1 + ((n + i) % 3);
          inFlight++;
          try {
            const r = await first.post<{ code: string }>('/v1/keys.verifyKey', { key, remaining: { cost } });
            if (r.status === 200 && r.json.code === 'VALID') {
              ledger.confirmed += cost;
              ledger.validAnswers++;
            } else ledger.unexpected.push(`${r.status} ${JSON.stringify(r.json)}`);
          } catch {
            ledger.lost += cost;
            ledger.lostRequests++;
          } finally {
            inFlight--;
          }
          if (ledger.validAnswers >= KILL_AFTER && !killing) {
            inFlightAtKill = inFlight;
            killing = first.kill();
          }
        }
      };
      await Promise.all(Array.from({ length: CONCURRENCY }, (_, n) => loop(n)));
      await killing;
      assert.equal((await first.exited).signal, 'SIGKILL');
      assert.deepEqual(ledger.unexpected, []);
      assert.ok(inFlightAtKill > 0, 'requests were in flight when the server was killed');

      const second = await ServerProcess.start(db.url, root);
      servers.push(second);
      const got = await second.get<{ remaining: number }>('/v1/keys.getKey', { keyId }, root);
      assert.equal(got.status, 200, JSON.stringify(got.json));
      const spent = CREDITS - got.json.remaining;
      t.diagnostic(
        `${ledger.validAnswers} VALID answers (cost ${ledger.confirmed}), ${ledger.lostRequests} answers lost (cost ${ledger.lost}), ` +
          `${inFlightAtKill} in flight at the kill; spent after restart: ${spent} (${spent - ledger.confirmed} for lost answers)`,
      );
      assert.ok(spent >= ledger.confirmed, `every VALID answer's credits are spent: spent ${spent} < confirmed ${ledger.confirmed}`);
      assert.ok(
        spent <= ledger.confirmed + ledger.lost,
        `only requests in flight may have spent unanswered: ${spent} > ${ledger.confirmed} + ${ledger.lost}`,
      );

      // The restarted server goes on from there.
      const next = await second.post<{ code: string; remaining: number }>('/v1/keys.verifyKey', { key });
      assert.deepEqual([next.json.code, next.json.remaining], ['VALID', got.json.remaining - 1]);
    });
  });
}
