import type { DashboardSession } from '../../services/dashboard/sessions.ts';
import type { Html } from './html.ts';
import { raw } from './html.ts';

/** What a viewer may still post: signing out and opening another workspace they are a member of. */
const VIEWER_POSTS = [/^\/dashboard\/sign-out$/, /^\/dashboard\/workspaces\/:workspaceId\/choose$/];

/** Whether this change request (a route's path) is refused because the session is a viewer's. */
export const refusesViewer = (session: DashboardSession, routePath: string): boolean =>
  session.role === 'viewer' && !VIEWER_POSTS.some((p) => p.test(routePath));

// The controls pages render for changes: forms that post, buttons that open a form (`?form=…`) or a
// confirmation dialog, and those dialogs (opening another workspace is no change: it stays). Every one is built by the dashboard's own components.
const CHANGE_CONTROLS = [
  /<form method="post" action="(?![^"]*\/choose")[\s\S]*?<\/form>/g,
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
