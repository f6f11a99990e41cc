import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Type } from '@sinclair/typebox';
import { compileQueryLists } from '../../src/http/query-lists.ts';
import { QueryList } from '../../src/http/schemas/common.ts';

// The one place a query's list parameters are split (run by every query validator: http/input-guards.ts).

const schema = Type.Object({
  id: Type.String(),
  ids: Type.Optional(QueryList(Type.String({ minLength: 1 }), 5, 'Ids.')),
  groups: Type.Optional(QueryList(Type.String(), 2, 'Groups.')),
});

test('a list parameter becomes the array of its items, sent repeated, comma-joined or both', () => {
  const split = compileQueryLists(schema)!;
  const cases: Array<[Record<string, unknown>, Record<string, unknown>]> = [
    [
      { id: 'x', ids: 'a' },
      { id: 'x', ids: ['a'] },
    ],
    [
      { id: 'x', ids: 'a,b' },
      { id: 'x', ids: ['a', 'b'] },
    ],
    [
      { id: 'x', ids: ['a', 'b'] },
      { id: 'x', ids: ['a', 'b'] },
    ],
    [
      { id: 'x', ids: ['a,b', 'c'], groups: 'g,h' },
      { id: 'x', ids: ['a', 'b', 'c'], groups: ['g', 'h'] },
    ],
    // Empty items are kept, for the item schema to refuse at their position.
    [{ ids: 'a,,b' }, { ids: ['a', '', 'b'] }],
    [{ ids: '' }, { ids: [''] }],
    // Only the declared lists: a scalar keeps its commas, an absent list stays absent, undeclared members are left alone.
    [
      { id: 'a,b', other: 'c,d' },
      { id: 'a,b', other: 'c,d' },
    ],
  ];
  for (const [query, expected] of cases) {
    const parsed = Object.assign(Object.create(null), query);
    split(parsed);
    assert.deepEqual({ ...parsed }, expected, JSON.stringify(query));
  }
  for (const notAQuery of [null, undefined, 'ids=a', ['a']]) split(notAQuery);
});

test('a schema without list parameters has no splitter', () => {
  assert.equal(compileQueryLists(Type.Object({ id: Type.String() })), undefined);
  assert.equal(compileQueryLists({}), undefined);
});

test('QueryList: 1..maxItems items, and its description says how to send several', () => {
  const list = QueryList(Type.String(), 7, 'Only these.');
  assert.equal(list.type, 'array');
  assert.equal(list.minItems, 1);
  assert.equal(list.maxItems, 7);
  assert.equal(list.description, 'Only these. Several: repeat the parameter, or join them with commas.');
});
