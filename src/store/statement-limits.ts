/**
 * Statement sizes that stay well inside both dialects' limits on bound parameters (SQLite 32,766,
 * PostgreSQL 65,535): at most MAX_PARAMS parameters per statement, at most IN_LIST_CHUNK values per
 * `IN (…)` list or rows per batch of a repeated statement.
 */
export const MAX_PARAMS = 16_000;
export const IN_LIST_CHUNK = 500;
