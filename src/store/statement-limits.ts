/**
 * Statement sizes that stay well inside both dialects' limits on bound parameters (SQLite 32,766,
 * PostgreSQL 65,535): at most MAX_PARAMS parameters per statement, at most IN_LIST_CHUNK values per
 * `IN (…)` list or rows per batch of a repeated statement.
 */
export const MAX_PARAMS = 16_000;
export const IN_LIST_CHUNK = 500;
/**
 * Rows per statement where PostgreSQL is sent them as one JSON parameter (the analytics recorders' rows,
 * last_used_at's times): a few hundred KB of JSON, parsed by the server in one pass.
 */
export const JSON_CHUNK = 2_000;
