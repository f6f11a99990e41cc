import type { DashboardSession } from '../../services/dashboard/sessions.ts';
import { html, type Html } from './html.ts';
import { csrfInput } from './components.ts';

/** The sections of the navigation, in order: [accessible name, path]. */
const SECTIONS: Array<[string, string]> = [
  ['APIs', '/dashboard/apis'],
  ['Root keys', '/dashboard/root-keys'],
  ['Roles', '/dashboard/roles'],
  ['Permissions', '/dashboard/permissions'],
  ['Identities', '/dashboard/identities'],
  ['Rate limits', '/dashboard/ratelimits'],
  ['Migrations', '/dashboard/migrations'],
  ['Webhooks', '/dashboard/webhooks'],
  ['Audit log', '/dashboard/audit-log'],
];

function document(title: string, body: Html): Html {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · Keyhold</title>
<link rel="icon" href="/dashboard/assets/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/dashboard/assets/dashboard.css">
<script type="module" src="/dashboard/assets/dashboard.js"></script>
</head>
<body>
${body}
</body>
</html>`;
}

/** A page of a signed-in session: header with workspace and sign-out, the navigation, and `main`. */
export function layout(view: { session: DashboardSession; csrf: string; path: string }, title: string, main: Html): Html {
  const sections: Array<[string, string]> = view.session.operator ? [['Workspaces', '/dashboard/workspaces'], ...SECTIONS] : SECTIONS;
  const links = sections.map(
    ([name, path]) =>
      html`<li><a href="${path}"${view.path === path || view.path.startsWith(`${path}/`) ? html` aria-current="page"` : ''}>${name}</a></li>`,
  );
  return document(
    title,
    html`<header class="top">
  <a class="brand" href="/dashboard">Keyhold</a>
  <span class="who">${view.session.operator ? 'Operator' : 'Workspace'}${view.session.workspaceId ? html` · <code>${view.session.workspaceId}</code>` : ''}</span>
  <form method="post" action="/dashboard/sign-out">${csrfInput(view.csrf)}<button type="submit" class="secondary">Sign out</button></form>
</header>
<nav aria-label="Dashboard"><ul>${links}</ul></nav>
<main id="main">
<h1>${title}</h1>
${main}
</main>`,
  );
}

/** The page shown wherever there is no session: how to get a sign-in link; `error` when a link was refused. */
export function signInPage(error?: string): Html {
  return document(
    'Sign in',
    html`<main id="main" class="narrow">
<h1>Sign in</h1>
${error ? html`<p class="error" role="alert">${error}</p>` : ''}
<p>The dashboard is opened with a one-time sign-in link. On the server, run</p>
<pre><code>keyhold dashboard link --workspace &lt;workspace id&gt;</code></pre>
<p>or, to see every workspace, <code>keyhold dashboard link --operator</code>, and open the link it prints.
A link signs in once and expires after 10 minutes; a session lasts 12 hours.</p>
</main>`,
  );
}

/** A page for a failed request (not found, forbidden, unavailable). */
export function errorPage(title: string, detail: string): Html {
  return document(
    title,
    html`<main id="main" class="narrow">
<h1>${title}</h1>
<p role="alert">${detail}</p>
<p><a href="/dashboard">Back to the dashboard</a></p>
</main>`,
  );
}

/** A page that loads `path` again from this origin, so that a same-site request carries the SameSite=Strict cookie. */
export function reloadPage(path: string): Html {
  return html`<!doctype html><html lang="en"><head><meta charset="utf-8"><link rel="icon" href="/dashboard/assets/favicon.svg" type="image/svg+xml"><meta http-equiv="refresh" content="0;url=${path}"><title>Keyhold</title></head><body><main><p><a href="${path}">Continue to the dashboard</a></p></main></body></html>`;
}
