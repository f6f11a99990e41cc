import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, OPERATOR, freshStore } from '../../helpers/harness.ts';
import { expectKind } from '../../helpers/errors.ts';
import type { Store } from '../../../src/store/store.ts';
import { createWorkspace } from '../../../src/services/workspaces/workspaces.ts';
import { operatorCaller, type Caller } from '../../../src/services/caller.ts';
import { createNamespace, findNamespaceByName } from '../../../src/services/ratelimits/namespaces.ts';
import { setOverride } from '../../../src/services/ratelimits/overrides.ts';
import { MAX_OVERRIDES_PER_NAMESPACE, MAX_PATTERNS_PER_NAMESPACE } from '../../../src/domain/bounds.ts';

for (const dialect of DIALECTS) {
  describe(`overrides per namespace are bounded (${dialect})`, () => {
    let store: Store;
    let close: () => Promise<void>;
    let caller: Caller;
    before(async () => {
      ({ store, close } = await freshStore(dialect));
      caller = operatorCaller((await createWorkspace(store.db, 'acme', OPERATOR)).workspaceId, OPERATOR, 'req_test');
    });
    after(() => close());

    /** Adds `n` overrides straight to the store (identifiers `<prefix><i>`), as if set one by one. */
    async function fill(namespaceName: string, prefix: string, n: number): Promise<void> {
      const ns = (await findNamespaceByName(store.db, caller.workspaceId, namespaceName))!;
      const now = Date.now();
      const rows = Array.from({ length: n }, (_, i) => ({
        id: `rlor_fill_${prefix.replace('*', 'p')}${i}`,
        workspace_id: caller.workspaceId,
        namespace_id: ns.id,
        identifier: `${prefix}${i}`,
        limit: 1,
        duration: 1000,
        async: null,
        created_at: now,
        updated_at: now,
      }));
      for (let i = 0; i < rows.length; i += 500)
        await store.db
          .insertInto('ratelimit_overrides')
          .values(rows.slice(i, i + 500))
          .execute();
    }
    const count = async () =>
      Number(
        (
          await store.db
            .selectFrom('ratelimit_overrides')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );

    test(`at most ${MAX_PATTERNS_PER_NAMESPACE} patterns: one more is a 412 writing nothing; exact ones and replacing a pattern still work`, async () => {
      await createNamespace(store.db, caller, 'patterns');
      await fill('patterns', 'user_*', MAX_PATTERNS_PER_NAMESPACE);
      const before = await count();
      const err = await expectKind(
        setOverride(store.db, caller, { namespaceName: 'patterns', identifier: 'admin_*', limit: 5, duration: 1000 }),
        'state/precondition-failed',
      );
      assert.match(err.message, new RegExp(`${MAX_PATTERNS_PER_NAMESPACE} pattern overrides`));
      assert.equal(await count(), before);
      await setOverride(store.db, caller, { namespaceName: 'patterns', identifier: 'user_*7', limit: 9, duration: 2000 });
      await setOverride(store.db, caller, { namespaceName: 'patterns', identifier: 'exact-user', limit: 9, duration: 2000 });
      assert.equal(await count(), before + 1);
    });

    test(`at most ${MAX_OVERRIDES_PER_NAMESPACE} overrides: one more is a 412; replacing one still works`, async () => {
      await createNamespace(store.db, caller, 'many');
      await fill('many', 'id-', MAX_OVERRIDES_PER_NAMESPACE);
      await expectKind(
        setOverride(store.db, caller, { namespaceName: 'many', identifier: 'one-more', limit: 5, duration: 1000 }),
        'state/precondition-failed',
      );
      const { overrideId } = await setOverride(store.db, caller, { namespaceName: 'many', identifier: 'id-42', limit: 5, duration: 1000 });
      assert.equal(overrideId, 'rlor_fill_id-42');
    });
  });
}
