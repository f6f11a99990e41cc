import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, OPERATOR, freshStore } from '../helpers/harness.ts';
import { BIG_TABLES, fillBigWorkspace, type BigWorkspace } from '../helpers/big-workspace.ts';
import { ALL_TABLES } from '../helpers/rows.ts';
import { bigTables, checkPlan, recordingStore, type Statement } from '../helpers/query-plans.ts';
import { OPERATIONS } from './query-plan-operations.ts';
import { operatorCaller } from '../../src/services/caller.ts';
import { ownedRows } from '../../src/services/pagination.ts';
import { openStore, type Store } from '../../src/store/store.ts';

// Every list and read an operator makes (the API's, v1 and v2, the CLI's and the dashboard's), run through the same
// service functions their routes call, against one workspace with 100,000 rows in each big table; each statement
// they send is EXPLAINed, and a plan that reads a whole big table, sorts a big table's rows for a page, or counts
// a big table's rows without a bound fails the test (docs/performance.md, "Query plans").

const ROWS = 100_000;
/**
 * The most statements one operation below may send (the most sent today: 27, by three v1 listKeys pages filtered by
 * externalId, 9 each). A statement per row, or per chunk of 500 rows (v1's listRoles once sent 200 for 100,000
 * roles), is far past it.
 */
const MAX_STATEMENTS = 30;

for (const dialect of DIALECTS) {
  describe(`query plans with ${ROWS.toLocaleString('en')} rows in each big table (${dialect})`, () => {
    let close: () => Promise<void>;
    let store: Store;
    let url: string;
    let big: BigWorkspace;
    let recorded: ReturnType<typeof recordingStore>;
    let bigOnes: Set<string>;

    before(async () => {
      const fresh = await freshStore(dialect);
      ({ store, url } = fresh);
      close = fresh.close;
      // Filled without the store's statement timeouts: a bulk insert of 100,000 rows may outlast them on a busy machine.
      const filler = openStore(url, { postgres: { statementMs: 0, queryMs: 0 } });
      try {
        big = await fillBigWorkspace(filler, ROWS);
      } finally {
        await filler.close();
      }
      bigOnes = await bigTables(store, ALL_TABLES, ROWS);
      recorded = recordingStore(url);
    });
    after(async () => {
      await recorded.store.close();
      await close();
    });

    test('the big tables are those the fill filled', () => {
      assert.deepEqual([...bigOnes].sort(), [...BIG_TABLES].sort());
    });

    test('the checks fail a read of every row, a sort for a page and (PostgreSQL) a count without a bound', async () => {
      const problemsOf = async (query: { compile(): Statement }) =>
        (await checkPlan(store, query.compile(), bigOnes, { sqlitePath: url.replace(/^sqlite:/, '') })).problems.join('; ');
      const keys = store.db.selectFrom('keys');
      assert.match(await problemsOf(keys.selectAll().where('name', '=', 'none')), /^every row: (Seq Scan on|SCAN) keys/);
      const byCreation = keys.selectAll().where('api_id', '=', big.apiId).orderBy('created_at').limit(10);
      assert.match(await problemsOf(byCreation), /(Sort of keys rows|USE TEMP B-TREE FOR ORDER BY over keys rows) for a LIMIT/);
      if (dialect === 'postgres') {
        const count = keys.select((eb) => eb.fn.countAll().as('n')).where('api_id', '=', big.apiId);
        assert.match(await problemsOf(count), /Aggregate over every matching row of keys/);
        const started = ownedRows(
          keys.selectAll().where('deleted_at', 'is', null).where('start', '=', 'big_abcd'),
          'api_id',
          big.apiId,
        ).limit(10);
        assert.match(await problemsOf(started), /^filter walk: reads \w+ and filters keys rows by \(start = /);
      }
    });

    for (const op of OPERATIONS) {
      test(op.name, async () => {
        recorded.take();
        const caller = operatorCaller(big.workspaceId, OPERATOR, 'req_plans');
        await op.run({ store: recorded.store, db: recorded.store.db, caller, big });
        const sent = recorded.take();
        const statements = distinct(sent);
        assert.ok(statements.length > 0, 'the operation sent no statement');
        // However many rows an answer holds, the statements that make it are a fixed few (none per row or chunk).
        assert.ok(sent.length <= MAX_STATEMENTS, `${sent.length} statements sent, at most ${MAX_STATEMENTS} expected`);
        const failures: string[] = [];
        for (const statement of statements) {
          const options = { sqlitePath: url.replace(/^sqlite:/, ''), wholeAnswer: op.wholeAnswer, filteredWalk: op.filteredWalk };
          const { plan, problems } = await checkPlan(store, statement, bigOnes, options);
          if (problems.length) failures.push(`${problems.join('; ')}\n  SQL: ${statement.sql}\n  plan: ${plan}`);
        }
        assert.deepEqual(failures, [], failures.join('\n\n'));
      });
    }
  });
}

/** One statement per SQL text: a chunked read sends the same text with other parameters. */
function distinct(statements: Statement[]): Statement[] {
  const seen = new Map<string, Statement>();
  for (const s of statements) if (!seen.has(s.sql)) seen.set(s.sql, s);
  return [...seen.values()];
}
