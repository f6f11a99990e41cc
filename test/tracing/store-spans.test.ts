import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CompiledQuery, DummyDriver, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler } from 'kysely';
import type { Database } from '../../src/store/schema.ts';
import { rawName, statementName } from '../../src/tracing/store-spans.ts';

// A Kysely that only compiles: the statements' trees are what the names come from.
const db = new Kysely<Database>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (k) => new PostgresIntrospector(k),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
});
const SECRET = 'kh_secret_value';

test('a statement built with Kysely is named by its operation and table, never by a value', () => {
  const cases: Array<[CompiledQuery, { operation: string; table?: string }]> = [
    [db.selectFrom('keys as k').select('k.id').where('k.hash', '=', SECRET).compile(), { operation: 'select', table: 'keys' }],
    [
      db
        .insertInto('audit_logs')
        .values({ id: SECRET } as never)
        .compile(),
      { operation: 'insert', table: 'audit_logs' },
    ],
    [db.updateTable('keys').set({ name: SECRET }).where('id', '=', SECRET).compile(), { operation: 'update', table: 'keys' }],
    [db.deleteFrom('jobs').where('id', '=', SECRET).compile(), { operation: 'delete', table: 'jobs' }],
  ];
  for (const [query, name] of cases) {
    assert.deepEqual(statementName(query), name, query.sql);
    assert.ok(!JSON.stringify(statementName(query)).includes(SECRET));
  }
});

test('raw SQL is named from the words outside literals, parentheses and comments', () => {
  const cases: Array<[string, { operation: string; table?: string }]> = [
    ['select 1', { operation: 'select' }],
    ['begin immediate', { operation: 'begin' }],
    // The key record's statement: subqueries in its select list read other tables first.
    [
      'select k.id, (select json_agg(r.name) from keys_roles kr join roles r on r.id = kr.role_id) as roles from keys k where k.hash = $1',
      { operation: 'select', table: 'keys' },
    ],
    ['update "keys" set remaining = remaining - $1 where id = $2', { operation: 'update', table: 'keys' }],
    ['delete from jobs where id = ?', { operation: 'delete', table: 'jobs' }],
    [
      'with w0 as (insert into "keys" ("id") values ($1)) insert into "audit_logs" ("id") values ($2)',
      { operation: 'insert', table: 'audit_logs' },
    ],
    // A statement that only reads its own CTE is named by the first CTE that writes.
    [
      'with g as (select exists (select 1 from keys where hash = $1) as held), w1 as (insert into "keys" ("id") select $2 where not (select held from g)) select held from g',
      { operation: 'insert', table: 'keys' },
    ],
    // A literal is never read: not even a word in it that follows FROM.
    [`select 'x from ${SECRET}' as v -- from ${SECRET}\n/* from ${SECRET} */`, { operation: 'select' }],
    [`-- ${SECRET}\nselect 'it''s', a from t`, { operation: 'select', table: 't' }],
  ];
  for (const [sql, name] of cases) {
    assert.deepEqual(rawName(sql), name, sql);
    assert.deepEqual(statementName(CompiledQuery.raw(sql, [SECRET])), name, sql);
  }
});
