import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { grants, permissionProblem } from '../../src/domain/permissions.ts';

describe('permissions grammar (permissionProblem)', () => {
  for (const p of [
    '*',
    'api.*.create_key',
    'api.api_123.read_key',
    'rbac.*.add_role_to_key',
    'identity.*.read_identity',
    'ratelimit.*.limit',
  ]) {
    test(`valid: ${p}`, () => assert.equal(permissionProblem(p), null));
  }
  const invalidCases: Array<[string, string, RegExp]> = [
    ['unknown type', 'vault.*.read_key', /unknown resource type "vault"/],
    ['unknown action', 'api.*.fly', /unknown action "fly"/],
    ['action of another type', 'api.*.create_role', /unknown action "create_role"/],
    ['two parts', 'api.read_key', /not of the form/],
    ['four parts', 'api.*.read_key.extra', /not of the form/],
    ['empty', '', /not of the form/],
    ['empty resource id', 'api..read_key', /resource id/],
    ['two stars', '*.*', /not of the form/],
  ];
  for (const [name, p, message] of invalidCases) {
    test(`invalid: ${name} (${JSON.stringify(p)})`, () => {
      const problem = permissionProblem(p);
      assert.equal(typeof problem, 'string');
      assert.match(problem!, message);
    });
  }
});

describe('permission evaluation (grants)', () => {
  test('"*" grants everything', () => {
    const held = new Set(['*']);
    for (const p of ['api.api_1.read_key', 'api.*.create_api', 'rbac.*.add_role_to_key', 'identity.id_1.delete_identity']) {
      assert.equal(grants(held, p), true, p);
    }
  });
  test('api.*.x grants api.<id>.x and api.*.x, but not api.<id>.y nor another type', () => {
    const held = new Set(['api.*.read_key']);
    assert.equal(grants(held, 'api.api_123.read_key'), true);
    assert.equal(grants(held, 'api.*.read_key'), true);
    assert.equal(grants(held, 'api.api_123.create_key'), false);
    assert.equal(grants(held, 'api.*.create_key'), false);
    assert.equal(grants(held, 'rbac.*.read_key'), false);
  });
  test('an exact permission grants itself only', () => {
    const held = new Set(['api.a.read_key']);
    assert.equal(grants(held, 'api.a.read_key'), true);
    assert.equal(grants(held, 'api.b.read_key'), false);
    assert.equal(grants(held, 'api.*.read_key'), false);
    assert.equal(grants(held, 'api.a.create_key'), false);
  });
  test('an empty set grants nothing', () => {
    assert.equal(grants(new Set(), 'api.a.read_key'), false);
    assert.equal(grants(new Set(), '*'), false);
  });
});
