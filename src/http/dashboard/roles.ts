import type { DashboardSession } from '../../services/dashboard/sessions.ts';
import type { Html } from './html.ts';
import { raw } from './html.ts';

/**
 * What a viewer may still post, since it changes nothing: signing out, opening another workspace they are a member
 * of, and running a query in an API's Analytics page (read-only SQL; a post only to carry the query and CSRF token).
 */
const VIEWER_POSTS = [
  /^\/dashboard\/sign-out$/,
  /^\/dashboard\/workspaces\/:workspaceId\/choose$/,
  /^\/dashboard\/apis\/:apiId\/analytics$/,
];

/** Whether this change request (a route's path) is refused because the session is a viewer's. */
export const refusesViewer = (session: DashboardSession, routePath: string): boolean =>
  session.role === 'viewer' && !VIEWER_POSTS.some((p) => p.test(routePath));

// The controls pages render for changes: forms that post, buttons that open a form (`?form=…`) or a
// confirmation dialog, and those dialogs (opening another workspace and an analytics query are no change: they stay).
// Every one is built by the dashboard's own components.
const CHANGE_CONTROLS = [
  /<form method="post" action="(?![^"]*\/(?:choose|analytics#query)")[\s\S]*?<\/form>/g,
  /<form method="get"[^>]*><input type="hidden" name="form"[\s\S]*?<\/form>/g,
  /<button type="button" class="danger" data-dialog-open="[^"]*">[\s\S]*?<\/button>/g,
  /<dialog[\s\S]*?<\/dialog>/g,
];

/**
 * A page's main content as a viewer sees it: without any control that would change something. Done here,
 * once, for every page (a page never has to know about viewers); the router refuses their posts anyway.
 */
export function withoutChangeControls(main: Html): Html {
  let text = main.text;
  for (const pattern of CHANGE_CONTROLS) text = text.replace(pattern, '');
  return raw(text);
}
