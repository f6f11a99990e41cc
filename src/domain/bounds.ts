/**
 * The bounds of every number and structure a request may carry, one definition per domain. Each numeric
 * bound is an integer that JSON, JavaScript (≤ 2^53 − 1), SQLite INTEGER and PostgreSQL BIGINT all hold
 * exactly, and small enough that the arithmetic done on it cannot overflow: window ends (`(⌊now / duration⌋
 * + 1) · duration`), refill dates, `expires` comparisons, `remaining − cost`, and a rate-limit counter plus
 * a cost (Redis counts in Lua doubles, exact to 2^53). docs/api-reference.md (HTTP conventions) lists them.
 */
export const BOUNDS = {
  /** An instant, epoch milliseconds: 1970-01-01 to 9999-12-31T23:59:59.999Z (what an ISO date can show). */
  timestamp: { minimum: 0, maximum: 253_402_300_799_999 },
  /** A rate-limit window in milliseconds: one second to 366 days (a yearly quota). */
  duration: { minimum: 1_000, maximum: 31_622_400_000 },
  /** Credits a key holds or receives (remaining, refill amount, updateRemaining values). */
  count: { minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
  /** Requests a rate limit admits per window. */
  limit: { minimum: 0, maximum: 1_000_000_000_000 },
  /** What one verification spends: credits, or units of a rate limit. */
  cost: { minimum: 0, maximum: 1_000_000_000_000 },
} as const;

export type NumericDomain = keyof typeof BOUNDS;

/** How deeply a request body (meta included) may nest objects and arrays. */
export const MAX_BODY_DEPTH = 32;

/** How many problems a 400 lists in `errors` (its `detail` gives their count). */
export const MAX_LISTED_PROBLEMS = 100;

/** How many items one list may hold: the queries of a permission query's `and` / `or`, the values of a list query parameter. */
export const MAX_QUERY_ITEMS = 100;

/**
 * Tags one verification may carry (keys.verifyKey v1 and v2), and the length of each, in characters; a
 * `tag` filter of v1's analytics.getVerifications has the same bounds.
 */
export const MAX_TAGS = 20;
export const MAX_TAG_LENGTH = 128;

/** Whether a string can be stored and compared the same on both dialects: no NUL, no lone UTF-16 surrogate. */
export const isStorableText = (s: string): boolean => !s.includes('\0') && s.isWellFormed();

/** Longest rate-limit namespace name and identifier (characters), as Unkey's v1 clients send them. */
export const MAX_RATELIMIT_NAME = 255;

/**
 * Overrides one namespace may hold, and how many of them may be `*` patterns: every ratelimits.limit call
 * tries the patterns of its namespace in turn, and every server keeps a namespace's overrides in memory.
 */
export const MAX_OVERRIDES_PER_NAMESPACE = 10_000;
export const MAX_PATTERNS_PER_NAMESPACE = 100;

/** Tokens one secret scanning report may carry, and its size: GitHub sends at most 1,000 per request. */
export const MAX_LEAK_REPORT_ITEMS = 1_000;
export const MAX_LEAK_REPORT_BYTES = 1024 * 1024;
/** Members one workspace may have in the dashboard (people, not machines: a support team is far fewer). */
export const MAX_MEMBERS_PER_WORKSPACE = 1_000;

/** Longest email address a dashboard member or user may have (RFC 5321's path limit). */
export const MAX_EMAIL_LENGTH = 254;
