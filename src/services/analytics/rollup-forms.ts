/**
 * The coarser forms of each verification roll-up (migration 0014), coarsest last: the columns of each one's group.
 * A query that only sums over groups reads the coarsest form that has every column it names
 * (query/compile-projection.ts); the batch writer keeps all of them.
 */
export const VERIFICATION_FORMS = {
  by_key: ['workspace_id', 'time', 'key_space_id', 'key_id', 'identity_id', 'external_id', 'outcome'],
  by_api: ['workspace_id', 'time', 'key_space_id', 'outcome'],
} as const;
export type VerificationForm = keyof typeof VERIFICATION_FORMS;
