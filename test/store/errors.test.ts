import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { isStoreUnavailable, StoreUnavailableError } from '../../src/store/errors.ts';

const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });
const sqlite = (errcode: number) => Object.assign(new Error('sqlite'), { code: 'ERR_SQLITE_ERROR', errcode });

describe('isStoreUnavailable', () => {
  test('a store that cannot be reached, broke the connection or ran out of time is unavailable', () => {
    const unavailable: Array<[string, unknown]> = [
      ['refused', withCode('ECONNREFUSED')],
      ['reset', withCode('ECONNRESET')],
      ['connect timeout (socket)', withCode('ETIMEDOUT')],
      ['unknown host', withCode('ENOTFOUND')],
      ['PostgreSQL admin shutdown', withCode('57P01', 'terminating connection due to administrator command')],
      ['PostgreSQL starting up', withCode('57P03')],
      ['statement_timeout', withCode('57014', 'canceling statement due to statement timeout')],
      ['idle in transaction timeout', withCode('25P03')],
      ['lock_timeout', withCode('55P03')],
      ['connection exception class 08', withCode('08006')],
      ['too many connections (class 53)', withCode('53300')],
      ['pg: connection terminated', new Error('Connection terminated unexpectedly')],
      ['pg: connect timeout', new Error('Connection terminated due to connection timeout')],
      ['pg-pool: no free client in time', new Error('timeout exceeded when trying to connect')],
      ['pg: client broken', new Error('Client has encountered a connection error and is not queryable')],
      ['pg: query_timeout', new Error('Query read timeout')],
      ['SQLITE_BUSY', sqlite(5)],
      ['SQLITE_BUSY_SNAPSHOT (extended)', sqlite(517)],
      ['SQLITE_LOCKED', sqlite(6)],
      ['SQLITE_IOERR_WRITE (extended)', sqlite(778)],
      ['SQLITE_CANTOPEN', sqlite(14)],
      ["Keyhold's own deadline", new StoreUnavailableError('no answer')],
      ['nested in cause', new Error('wrapped', { cause: withCode('ECONNREFUSED') })],
      ['one of several addresses', new AggregateError([withCode('ECONNREFUSED'), withCode('ECONNREFUSED')], 'connect')],
    ];
    for (const [what, err] of unavailable) assert.equal(isStoreUnavailable(err), true, what);
  });

  test('an answer from the store, however negative, is not unavailability', () => {
    const answered: Array<[string, unknown]> = [
      ['unique violation', withCode('23505', 'duplicate key value')],
      ['foreign key violation', withCode('23503')],
      ['syntax error', withCode('42601')],
      ['serialization failure', withCode('40001')],
      ['deadlock', withCode('40P01')],
      ['SQLITE_CONSTRAINT_UNIQUE', sqlite(2067)],
      ['SQLITE_ERROR', sqlite(1)],
      ['a plain error', new Error('something else')],
      ['not an error', 'ECONNREFUSED'],
      ['nothing', undefined],
      ['null', null],
    ];
    for (const [what, err] of answered) assert.equal(isStoreUnavailable(err), false, what);
  });

  test('cause chains are followed a bounded depth (a cycle ends)', () => {
    const a = new Error('a') as Error & { cause?: unknown };
    const b = new Error('b', { cause: a });
    a.cause = b;
    assert.equal(isStoreUnavailable(a), false);
  });
});
