/** A stored rate limit of a key or of its identity, as Unkey v2 shows it in a verification (with its id). */
export interface ConfiguredLimitRow {
  id: string;
  name: string;
  limit: number;
  duration: number;
  autoApply: boolean;
  /** Whether it is the identity's (shared by its keys) rather than the key's own. */
  ofIdentity: boolean;
}
