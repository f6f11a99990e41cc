import { test } from 'node:test';
import assert from 'node:assert/strict';
import { countText } from '../../../src/http/dashboard/components.ts';
import { TOTAL_CAP } from '../../../src/services/pagination.ts';

// The dashboard prints a list's capped total (services/pagination.ts) as a person reads it.
test('a total is printed exactly up to the cap, and as "more than 10,000" past it', () => {
  assert.equal(countText(0), '0');
  assert.equal(countText(1), '1');
  assert.equal(countText(TOTAL_CAP), String(TOTAL_CAP));
  assert.equal(countText(TOTAL_CAP + 1), 'more than 10,000');
  assert.equal(countText(undefined), '');
});
