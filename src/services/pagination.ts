/** Page size of list operations when the caller gives no `limit`. */
export const DEFAULT_PAGE_SIZE = 100;

/**
 * Cursor pagination by id: fetch `limit + 1` rows after the cursor, then split them here into the page and
 * the cursor of the next page, which is present only when another page exists.
 */
export function splitPage<T extends { id: string }>(rows: T[], limit: number): { page: T[]; cursor?: string } {
  const page = rows.slice(0, limit);
  return { page, cursor: rows.length > limit ? page[page.length - 1].id : undefined };
}
