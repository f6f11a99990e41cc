import type { PageResult } from '../context.ts';
import { errorPage } from '../layout.ts';

/** Rows per page of the roles, permissions and identities lists. */
export const PAGE_SIZE = 50;

/**
 * One page of a list the v1 operation answers whole (listRoles, listPermissions: every item, by id): the items
 * after `cursor`, and the cursor of the next page when there is one, so these lists paginate like the others.
 * The cursor is found by position, since the database's collation may order ids unlike JavaScript does; a
 * cursor deleted meanwhile falls back to comparing ids.
 */
export function pageAfter<T extends { id: string }>(
  items: T[],
  cursor: string | undefined,
  size = PAGE_SIZE,
): { page: T[]; cursor?: string } {
  const at = cursor ? items.findIndex((i) => i.id === cursor) : -1;
  const rest = !cursor ? items : at >= 0 ? items.slice(at + 1) : items.filter((i) => i.id > cursor);
  const page = rest.slice(0, size);
  return { page, cursor: rest.length > size ? page[page.length - 1].id : undefined };
}

/**
 * The page for an operation a button performed that the API refused (a resource of another workspace or
 * deleted meanwhile: 404), with the operation's status, as the dashboard answers a failed request.
 */
export function refusedPage(outcome: { status: number; error: { detail: string } }): PageResult {
  const title = outcome.status === 404 ? 'Not found' : 'Request failed';
  return { page: errorPage(title, outcome.error?.detail ?? 'The request failed.'), status: outcome.status };
}
