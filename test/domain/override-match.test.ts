import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { globMatches, isPattern, OverrideSet, type OverrideRule } from '../../src/domain/override-match.ts';

describe('globMatches: `*` is any sequence (possibly empty), everything else literal, anchored at both ends', () => {
  const cases: Array<[pattern: string, text: string, matches: boolean]> = [
    // No star: equality.
    ['user_1', 'user_1', true],
    ['user_1', 'user_12', false],
    ['user_1', 'xuser_1', false],
    ['', '', true],
    ['', 'a', false],
    ['a', '', false],
    // Anchoring: a prefix pattern does not match in the middle, a suffix pattern does not match a prefix.
    ['user_*', 'user_1', true],
    ['user_*', 'xuser_1', false],
    ['*_admin', 'bob_admin', true],
    ['*_admin', 'bob_admin2', false],
    ['a*b', 'ab', true],
    ['a*b', 'axxb', true],
    ['a*b', 'axxbc', false],
    ['a*b', 'caxxb', false],
    // `*` matches the empty sequence.
    ['user_*', 'user_', true],
    ['*', '', true],
    ['*', 'anything at all', true],
    ['*user', 'user', true],
    ['us*er', 'user', true],
    // Several stars.
    ['*.*.*', 'a.b.c', true],
    ['*.*.*', '..', true],
    ['*.*.*', 'a.b', false],
    ['a*b*c', 'abc', true],
    ['a*b*c', 'aXbYbZc', true],
    ['a*b*c', 'acb', false],
    ['*ab*ab*', 'xabyab', true],
    ['*ab*ab*', 'xaby', false],
    // `**` is the same as `*`.
    ['**', '', true],
    ['**', 'xyz', true],
    ['a**b', 'ab', true],
    ['a**b', 'a--b', true],
    ['a**b', 'a--c', false],
    // Backtracking past a partial match.
    ['*aab', 'aaab', true],
    ['*abc', 'ababc', true],
    ['a*bc', 'abcbc', true],
    ['a*bc', 'abcb', false],
    // Regular-expression characters are literal.
    ['1.2.3.4', '1.2.3.4', true],
    ['1.2.3.4', '1x2x3x4', false],
    ['a+', 'a+', true],
    ['a+', 'aa', false],
    ['(x)', '(x)', true],
    ['(x)', 'x', false],
    ['[ab]', 'a', false],
    ['[ab]', '[ab]', true],
    ['a?', 'ab', false],
    ['a?', 'a?', true],
    ['^a$', 'a', false],
    ['^a$', '^a$', true],
    ['a|b', 'a', false],
    ['\\d', '1', false],
    ['\\d', '\\d', true],
    ['.*', 'anything', false],
    ['.*', '.anything', true],
    ['{1}', '{1}', true],
    // Case matters; non-ASCII characters are literal too.
    ['User_*', 'user_1', false],
    ['*é', 'café', true],
    ['*é', 'cafe', false],
  ];
  for (const [pattern, text, matches] of cases) {
    test(`${JSON.stringify(pattern)} ${matches ? 'matches' : 'does not match'} ${JSON.stringify(text)}`, () => {
      assert.equal(globMatches(pattern, text), matches);
    });
  }

  test('pathological patterns against 255 characters finish and answer correctly', () => {
    const as = 'a'.repeat(255);
    assert.equal(globMatches('*a*a*a*a*a*a*a*b', as), false);
    assert.equal(globMatches(`${'*a'.repeat(100)}*b`, as), false);
    assert.equal(globMatches(`${'a*'.repeat(127)}b`, as), false);
    assert.equal(globMatches('*'.repeat(255), as), true);
    assert.equal(globMatches(`${'*a'.repeat(100)}*`, as), true);
    assert.equal(globMatches('*a'.repeat(127), as), true);
    // 256 literal characters cannot fit in 255.
    assert.equal(globMatches(`${'a'.repeat(128)}*${'a'.repeat(128)}`, as), false);
    assert.equal(globMatches(`*${'a'.repeat(254)}b*`, as), false);
  });

  test('isPattern: exactly the identifiers holding a `*`', () => {
    assert.equal(isPattern('user_1'), false);
    assert.equal(isPattern('1.2.3.4'), false);
    assert.equal(isPattern('user_*'), true);
    assert.equal(isPattern('*'), true);
  });
});

let seq = 0;
/** A rule; `createdAt` and `id` default to increasing values, so later rules are newer unless a test says otherwise. */
const rule = (identifier: string, limit: number, over: Partial<OverrideRule> = {}): OverrideRule => {
  seq++;
  return { id: `rlor_${String(seq).padStart(4, '0')}`, identifier, limit, duration: 1000, async: null, createdAt: 1_000 + seq, ...over };
};

/** The limit of the rule that applies to `identifier` (limits are unique in each test), or undefined. */
const winner = (rules: OverrideRule[], identifier: string) => new OverrideSet(rules).match(identifier)?.limit;

describe('OverrideSet: which override applies', () => {
  test('no rules, or none matching → undefined', () => {
    assert.equal(new OverrideSet([]).match('user_1'), undefined);
    assert.equal(new OverrideSet([]).size, 0);
    const set = new OverrideSet([rule('user_2', 1), rule('admin_*', 2)]);
    assert.equal(set.match('user_1'), undefined);
    assert.equal(set.match('xadmin_1'), undefined);
    assert.equal(set.size, 2);
  });

  test('an exact override is matched by equality only, and returns the whole rule', () => {
    const r = rule('user_1', 7, { duration: 60_000, async: true });
    const set = new OverrideSet([r, rule('user_2', 8)]);
    assert.deepEqual(set.match('user_1'), r);
    assert.equal(set.match('user_10'), undefined);
    assert.equal(set.match('User_1'), undefined);
  });

  test('an exact override beats every pattern, however literal, old or first listed', () => {
    const rules = [
      rule('*', 1, { createdAt: 1 }),
      rule('user_12*', 2, { createdAt: 2 }),
      rule('user_123*', 3, { createdAt: 3 }),
      rule('user_123', 4, { createdAt: 999_999 }),
    ];
    assert.equal(winner(rules, 'user_123'), 4);
    assert.equal(winner([...rules].reverse(), 'user_123'), 4);
    // Other identifiers fall to the patterns.
    assert.equal(winner(rules, 'user_1234'), 3);
    assert.equal(winner(rules, 'user_129'), 2);
    assert.equal(winner(rules, 'bob'), 1);
  });

  test('among patterns, the most literal (non-`*`) characters wins, whatever the order, age or star count', () => {
    const rules = [
      rule('*', 1, { createdAt: 1 }),
      rule('a*', 2, { createdAt: 2 }),
      rule('ab*', 3, { createdAt: 3 }),
      rule('*b*c*d*', 4, { createdAt: 6 }), // 3 literal characters, many stars
      rule('abc*', 5, { createdAt: 5 }),
    ];
    for (const order of [rules, [...rules].reverse()]) {
      assert.equal(winner(order, 'abcd'), 5); // abc* (3) ties *b*c*d* (3): the older wins
      assert.equal(winner(order, 'abcde'), 5);
      assert.equal(winner(order, 'abxd'), 3);
      assert.equal(winner(order, 'axbycz'), 2);
      assert.equal(winner(order, 'zbcd'), 4);
      assert.equal(winner(order, 'zz'), 1);
    }
    // `**` counts no literal characters: `a**` is as literal as `a*`.
    assert.equal(winner([rule('**x', 10, { createdAt: 5 }), rule('a*', 11, { createdAt: 6 })], 'ax'), 10);
    assert.equal(winner([rule('a**', 12, { createdAt: 5 }), rule('*', 13, { createdAt: 1 }), rule('*x', 14, { createdAt: 6 })], 'ax'), 12);
  });

  test('equally literal patterns: the oldest (smallest createdAt) wins, then the smallest id', () => {
    const older = rule('*_admin', 1, { createdAt: 100, id: 'rlor_z' });
    const newer = rule('user_a*', 2, { createdAt: 200, id: 'rlor_a' });
    assert.equal(winner([newer, older], 'user_admin'), 1);
    assert.equal(winner([older, newer], 'user_admin'), 1);
    // Same age: the smallest id.
    const b = rule('*_admin', 3, { createdAt: 100, id: 'rlor_b' });
    const a = rule('user_a*', 4, { createdAt: 100, id: 'rlor_a' });
    assert.equal(winner([b, a], 'user_admin'), 4);
    assert.equal(winner([a, b], 'user_admin'), 4);
    // The id decides only among equals: a more literal pattern with a larger id still wins.
    assert.equal(winner([a, b, rule('user_ad*', 5, { createdAt: 900, id: 'rlor_zz' })], 'user_admin'), 5);
  });

  test('an exact rule whose identifier has no `*` is never treated as a pattern (regex characters included)', () => {
    const set = new OverrideSet([rule('1.2.3.4', 1), rule('a+', 2)]);
    assert.equal(set.match('1x2x3x4'), undefined);
    assert.equal(set.match('aa'), undefined);
    assert.equal(set.match('1.2.3.4')?.limit, 1);
    assert.equal(set.match('a+')?.limit, 2);
  });
});
