import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, freshStore } from '../../helpers/harness.ts';
import { VerificationRecorder, type VerificationEvent } from '../../../src/services/verification/verification-recorder.ts';
import { readTags } from '../../../src/services/analytics/rollups.ts';
import type { Store } from '../../../src/store/store.ts';

// What a flush writes reads back exactly, whatever the text: tags (the caller's own strings) with the characters
// each dialect's literals and parameters treat specially, ids and request ids, over more rows than one statement
// of either dialect holds (SQLite: 256 rows per VALUES; PostgreSQL: 2,000 rows per JSON parameter).

const TAG_SETS: string[][] = [
  ['"quoted"', 'back\\slash', '{braces}', 'a,b'],
  ['NULL', '', ' spaced ', "it's"],
  ['ünïcödé 🔑', 'x=1;drop table keys', '\\"', '[]'],
  [],
];
const KEYS = 1_300;
const T = Date.UTC(2026, 10, 30, 10, 15);

for (const dialect of DIALECTS) {
  describe(`the recorder's writes keep text exactly (${dialect})`, () => {
    let store: Store;
    let close: () => Promise<void>;
    before(async () => {
      ({ store, close } = await freshStore(dialect));
    });
    after(() => close());

    test(`${KEYS * 2} events of ${KEYS} keys with tags of quotes, backslashes, braces and more: raw rows and roll-ups read back as recorded`, async () => {
      const recorder = new VerificationRecorder(store.db, { dialect });
      const events: VerificationEvent[] = [];
      for (let i = 0; i < KEYS * 2; i++) {
        const k = i % KEYS;
        events.push({
          keyId: `key_"${k}'\\`,
          workspaceId: 'ws_text',
          apiId: 'api_{text}',
          identityId: k % 2 ? `id_${k}` : null,
          externalId: k % 2 ? `ext "${k}"` : null,
          code: 'VALID',
          time: T + (i % 7) * 1000,
          requestId: `req_${i}`,
          tags: TAG_SETS[k % TAG_SETS.length],
          spentCredits: 1,
          latency: 0.5,
        });
      }
      for (const e of events) recorder.record(e);
      await recorder.flush();

      const raw = await store.db.selectFrom('analytics_key_verifications').selectAll().where('workspace_id', '=', 'ws_text').execute();
      assert.equal(raw.length, events.length);
      const byRequest = new Map(raw.map((r) => [r.request_id, r]));
      for (const e of events) {
        const r = byRequest.get(e.requestId!);
        assert.ok(r, `${e.requestId} was written`);
        assert.deepEqual(
          [r.key_id, r.key_space_id, r.identity_id, r.external_id, readTags(r.tags), Number(r.time), Number(r.spent_credits)],
          [e.keyId, e.apiId, e.identityId ?? '', e.externalId ?? '', [...(e.tags ?? [])], e.time, 1],
        );
      }

      // Each key's two events are in one minute with one tag set: one minute row and one per-key row of count 2.
      const minutes = await store.db
        .selectFrom('analytics_key_verifications_per_minute')
        .selectAll()
        .where('workspace_id', '=', 'ws_text')
        .execute();
      assert.equal(minutes.length, KEYS);
      for (const m of minutes) {
        const k = Number(m.key_id.slice(5, -2));
        assert.deepEqual(
          [m.key_id, readTags(m.tags), Number(m.count), Number(m.spent_credits)],
          [`key_"${k}'\\`, TAG_SETS[k % TAG_SETS.length], 2, 2],
        );
      }
      const perKey = await store.db
        .selectFrom('analytics_key_verifications_per_month_by_key')
        .select(['key_id', 'external_id', 'count'])
        .where('workspace_id', '=', 'ws_text')
        .execute();
      assert.equal(perKey.length, KEYS);
      assert.ok(perKey.every((p) => Number(p.count) === 2));
      const perApi = await store.db
        .selectFrom('analytics_key_verifications_per_day_by_api')
        .select(['key_space_id', 'count'])
        .where('workspace_id', '=', 'ws_text')
        .execute();
      assert.deepEqual(
        perApi.map((p) => [p.key_space_id, Number(p.count)]),
        [['api_{text}', KEYS * 2]],
      );
    });
  });
}
