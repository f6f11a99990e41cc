import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { DIALECTS, world, type World } from '../helpers/harness.ts';
import { freshHash, ID_SEEDS, type Resolve, type Seeds } from '../fuzz/json-text.ts';
import { render, requestsFor } from '../fuzz/requests.ts';
import { documentedOperations, seedWorkspace, Target, type Answer } from '../fuzz/target.ts';
import { dumpWorkspace, type Dump } from './dump.ts';

/**
 * Workspace isolation, for every route of the OpenAPI document: two workspaces A and B, each seeded with its
 * own API, key, role, permission, identity, migration, rate-limit namespace (with an override), webhook endpoint
 * (with a delivery) and usage export (with a report). B's `*` root key sends valid-looking requests (the fuzz
 * generator's, test/fuzz/requests.ts) whose resource members name A's resources — all of them, or some mixed
 * with B's own. Whenever a request names one of A's ids (and passes validation) the answer is 404 NOT_FOUND; a
 * 2xx answer holds none of A's ids; and A's rows in every table are byte-identical afterwards.
 *
 * Documented exceptions: `keys.verifyKey` takes no root key (the key is the credential): A's key verified for
 * B's API is not VALID and spends nothing. Members that only filter a listing (`targetId` of audit.listLogs)
 * answer 200 with none of A's records rather than 404. Namespace names are per workspace: A's namespace
 * name in B's ratelimits.limit is B's own namespace of that name (created on first use), never A's.
 */

/** Requests per route: at least MIN_SAMPLES, and more (up to MAX_SAMPLES) until ENOUGH have passed validation and reached a lookup. */
const MIN_SAMPLES = 24;
const MAX_SAMPLES = 200;
const ENOUGH = 6;
const SEED = 7;
/** Members whose id only filters what a listing returns: B gets its own (empty) listing, not a 404. */
const FILTERS = new Set(['targetId']);

const ops = await documentedOperations();

interface Resolution {
  resolve: Resolve;
  /** The members that named one of A's ids. */
  namedA: string[];
  /** The members that named one of B's resources. */
  namedB: string[];
}

/** SeedRefs resolved to A's seeds (`mixed`: every other one to B's), recording which of A's ids were named. */
function resolution(a: Seeds, b: Seeds, mixed: boolean, override: Partial<Record<keyof Seeds, Seeds>> = {}): Resolution {
  const namedA: string[] = [];
  const namedB: string[] = [];
  let n = 0;
  const resolve: Resolve = (ref) => {
    if (ref.seed === 'fresh-hash') return freshHash();
    const from = override[ref.seed] ?? (!mixed || n++ % 2 === 0 ? a : b);
    if (from === a && ID_SEEDS.includes(ref.seed)) namedA.push(ref.member);
    if (from === b) namedB.push(ref.member);
    return from[ref.seed];
  };
  return { resolve, namedA, namedB };
}

for (const dialect of DIALECTS) {
  describe(`workspace isolation: B's root key on A's resources, every route (${dialect})`, () => {
    let w: World;
    let target: Target;
    let a: Seeds;
    let b: Seeds;
    let bRoot: string;
    let initial: Dump;
    /** A's ids and its key, which no answer to B may hold. */
    let secrets: string[];
    before(async () => {
      w = await world(dialect);
      target = new Target(w);
      a = await seedWorkspace(w);
      const other = await w.otherWorkspace();
      bRoot = other.root;
      b = await seedWorkspace(w, other.root, other.workspaceId);
      initial = await dumpWorkspace(w, w.workspaceId);
      secrets = [w.workspaceId, ...ID_SEEDS.map((s) => a[s])];
    });
    after(() => w.close());

    const leaked = (res: Answer) => secrets.filter((s) => res.body.includes(s));

    for (const op of ops) {
      test(`${op.method} ${op.path}`, async (t) => {
        const samples = fc.sample(requestsFor(op, { seeded: 1, validOnly: true }), { numRuns: MAX_SAMPLES, seed: SEED });
        const before = await dumpWorkspace(w, w.workspaceId);
        let sent = 0;
        let reached = 0;
        let named = 0;
        for (const [i, req] of samples.entries()) {
          if (i >= MIN_SAMPLES && (reached >= ENOUGH || !named)) break;
          // verifyKey: A's key for B's API (without an API, whoever holds a key may verify it). Every other route: B's root key.
          const { resolve, namedA, namedB } = op.isPublic ? resolution(a, b, false, { apiId: b }) : resolution(a, b, i % 2 === 1);
          const rendered = render(req, resolve, op.isPublic ? null : bRoot);
          if (op.isPublic && namedA.length && !namedB.length) continue;
          sent++;
          const res = await target.send(rendered);
          const what = `${rendered.method} ${rendered.url} ${rendered.payload ?? ''} → ${res.status} ${res.body}`.slice(0, 1500);
          assert.ok(res.status < 500, what);
          if (res.status < 300) assert.deepEqual(leaked(res), [], `an answer to B holds A's ids: ${what}`);
          if (!namedA.length) continue;
          named++;
          if (res.status === 400) continue;
          reached++;
          if (op.isPublic) {
            // A's key, B's API: an apiId unknown to the key's workspace.
            assert.equal(res.status, 200, what);
            assert.equal(JSON.parse(res.body).code, 'NOT_FOUND', what);
            continue;
          }
          if (namedA.every((m) => FILTERS.has(m)) && res.status < 300) continue;
          if (op.path === '/v2/keys.verifyKey') {
            // v2 verifies with a root key: A's key is B's NOT_FOUND, as an unknown key is (200, nothing else).
            assert.equal(res.status, 200, what);
            assert.deepEqual(JSON.parse(res.body).data, { valid: false, code: 'NOT_FOUND' }, what);
            continue;
          }
          // v2's ratelimit.limit takes a namespace id or name: A's id is a name in B, whose namespace it creates
          // (B's own counters; A's rows are checked unchanged below).
          if (/^\/v2\/ratelimit\.(limit|multiLimit)$/.test(op.path) && res.status < 300) continue;
          assert.equal(res.status, 404, `B named A's ${namedA.join(', ')}: ${what}`);
          const { error } = JSON.parse(res.body);
          if (op.path.startsWith('/v2/')) assert.match(error.type, /_not_found$/, what);
          else assert.equal(error.code, 'NOT_FOUND', what);
        }
        t.diagnostic(`${sent} requests, ${named} naming A's ids, ${reached} of them past validation`);
        if (named) assert.ok(reached > 0, `none of the ${named} requests naming A's ids passed validation: no lookup was tested`);
        assert.deepEqual(await dumpWorkspace(w, w.workspaceId), before, `A's rows changed`);
      });
    }

    test("with the app closed (analytics flushed), A's rows are still exactly as seeded", async () => {
      await w.app.close();
      assert.deepEqual(await dumpWorkspace(w, w.workspaceId), initial);
    });
  });
}
