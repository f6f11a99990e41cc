import type { PageResult } from '../context.ts';
import { errorPage } from '../layout.ts';

/** Rows per page of the roles, permissions and identities lists. */
export const PAGE_SIZE = 50;

/**
 * The page for an operation a button performed that the API refused (a resource of another workspace or
 * deleted meanwhile: 404), with the operation's status, as the dashboard answers a failed request.
 */
export function refusedPage(outcome: { status: number; error: { detail: string } }): PageResult {
  const title = outcome.status === 404 ? 'Not found' : 'Request failed';
  return { page: errorPage(title, outcome.error?.detail ?? 'The request failed.'), status: outcome.status };
}
