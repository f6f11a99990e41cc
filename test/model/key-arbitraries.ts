import fc from 'fast-check';
import { Create, Credits, Delete, Links, Reroll, SetEnabled, Verify } from './key-commands.ts';
import { Get } from './key-reads.ts';
import { LONG_GRACE_MS, PERMISSIONS, ROLES, UNKNOWN_ROLE, type Model, type Query } from './key-model.ts';
import type { ModelWorld } from './model-world.ts';

// The arbitraries of the model's commands: random v1 and v2 operations on a few keys per sequence.

const version = fc.constantFrom(1 as const, 2 as const);
const pick = fc.nat({ max: 7 });
const permission = fc.constantFrom(...PERMISSIONS);
const roleNames = Object.keys(ROLES);
/** true once in `n` draws. */
const oneIn = (n: number) => fc.nat({ max: n - 1 }).map((i) => i === 0);

/** A permission query at most two levels deep. */
export const query: fc.Arbitrary<Query> = fc.oneof(
  { weight: 2, arbitrary: permission },
  fc.record({ and: fc.array(permission, { minLength: 1, maxLength: 3 }) }),
  fc.record({ or: fc.array(permission, { minLength: 1, maxLength: 3 }) }),
  fc.record({
    and: fc.array(fc.oneof(permission, fc.record({ or: fc.array(permission, { minLength: 1, maxLength: 2 }) })), {
      minLength: 1,
      maxLength: 2,
    }),
  }),
);

const create = fc
  .record({
    version,
    api: fc.nat({ max: 1 }),
    remaining: fc.option(fc.integer({ min: 0, max: 5 }), { freq: 3 }),
    limit: fc.option(fc.integer({ min: 1, max: 4 }), { freq: 2 }),
    direct: fc.subarray([...PERMISSIONS]),
    roles: fc.subarray(roleNames),
    externalId: fc.option(fc.constantFrom('model-user-1', 'model-user-2'), { nil: undefined }),
    enabled: oneIn(6).map((off) => !off),
  })
  // v1 keys.createKey takes `remaining` from 1.
  .map((s) => new Create({ ...s, remaining: s.version === 1 && s.remaining === 0 ? 1 : s.remaining }));

const verify = fc
  .record({
    version,
    pick,
    unknown: oneIn(20),
    api: fc.option(fc.nat({ max: 1 }), { nil: undefined, freq: 2 }),
    query: fc.option(query, { nil: undefined, freq: 2 }),
    cost: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined, freq: 2 }),
  })
  .map((s) => new Verify(s.version === 1 ? s : { ...s, api: undefined }));

const credits = fc
  .record({
    version,
    pick,
    op: fc.constantFrom('set' as const, 'increment' as const, 'decrement' as const),
    value: fc.integer({ min: 0, max: 4 }),
  })
  .chain((s) =>
    s.op === 'set'
      ? fc.option(fc.constant(s.value), { freq: 4 }).map((value) => new Credits({ ...s, value }))
      : fc.constant(new Credits(s)),
  );

const links = fc
  .record({
    version,
    pick,
    kind: fc.constantFrom('permissions' as const, 'roles' as const),
    mode: fc.constantFrom('add' as const, 'remove' as const, 'set' as const),
  })
  .chain((s) => {
    const universe = s.kind === 'roles' ? [...roleNames, UNKNOWN_ROLE] : [...PERMISSIONS];
    return fc.subarray(universe, { minLength: s.mode === 'set' ? 0 : 1 }).map((items) => new Links({ ...s, items }));
  });

/** Every command, weighted: verifications most, since they are what the other operations change. */
export function keyCommands(): fc.Arbitrary<fc.AsyncCommand<Model, ModelWorld>>[] {
  return [
    create,
    create,
    verify,
    verify,
    verify,
    verify,
    credits,
    links,
    fc.record({ version, pick, enabled: fc.boolean() }).map((s) => new SetEnabled(s)),
    fc.record({ pick, grace: fc.constantFrom(0, LONG_GRACE_MS) }).map((s) => new Reroll(s)),
    fc.record({ version, pick, permanent: fc.boolean() }).map((s) => new Delete(s)),
    fc.record({ version, pick }).map((s) => new Get(s)),
  ];
}
