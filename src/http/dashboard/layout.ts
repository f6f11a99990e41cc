import type { DashboardSession } from '../../services/dashboard/sessions.ts';
import { html, type Html } from './html.ts';
import { csrfInput } from './components.ts';
import { withoutChangeControls } from './roles.ts';

/** The sections of the navigation, in order: [accessible name, path]. */
const SECTIONS: Array<[string, string]> = [
  ['APIs', '/dashboard/apis'],
  ['Members', '/dashboard/members'],
  ['Root keys', '/dashboard/root-keys'],
  ['Roles', '/dashboard/roles'],
  ['Permissions', '/dashboard/permissions'],
  ['Identities', '/dashboard/identities'],
  ['Rate limits', '/dashboard/ratelimits'],
  ['Migrations', '/dashboard/migrations'],
  ['Webhooks', '/dashboard/webhooks'],
  ['Usage exports', '/dashboard/usage-exports'],
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
  const sections: Array<[string, string]> = view.session.operator
    ? [['Workspaces', '/dashboard/workspaces'], ['Sessions', '/dashboard/sessions'], ...SECTIONS]
    : view.session.user
      ? [['Workspaces', '/dashboard/workspaces'], ...SECTIONS]
      : SECTIONS;
  const shown = view.session.role === 'viewer' ? withoutChangeControls(main) : main;
  const links = sections.map(
    ([name, path]) =>
      html`<li><a href="${path}"${view.path === path || view.path.startsWith(`${path}/`) ? html` aria-current="page"` : ''}>${name}</a></li>`,
  );
  return document(
    title,
    html`<header class="top">
  <a class="brand" href="/dashboard">Keyhold</a>
  <span class="who">${view.session.user ? html`${view.session.user.email} · ` : ''}${view.session.operator ? 'Operator' : view.session.role === 'viewer' ? 'Viewer' : 'Workspace'}${view.session.workspaceId ? html` · <code>${view.session.workspaceId}</code>` : ''}</span>
  <form method="post" action="/dashboard/sign-out">${csrfInput(view.csrf)}<button type="submit" class="secondary">Sign out</button></form>
</header>
<nav aria-label="Dashboard"><ul>${links}</ul></nav>
<main id="main">
<h1>${title}</h1>
${shown}
</main>`,
  );
}

/**
 * The page shown wherever there is no session: "Sign in with SSO" when single sign-on is configured, and how to
 * get a one-time sign-in link (the break-glass path); `error` when a sign-in was refused.
 */
export function signInPage(options: { error?: string; sso?: boolean } = {}): Html {
  return document(
    'Sign in',
    html`<main id="main" class="narrow">
<h1>Sign in</h1>
${options.error ? html`<p class="error" role="alert">${options.error}</p>` : ''}
${options.sso ? html`<p><a class="button" role="button" href="/dashboard/oidc/start">Sign in with SSO</a></p><h2>Sign-in link</h2>` : ''}
<p>A one-time sign-in link opens the dashboard too. On the server, from a checkout of Keyhold, run</p>
<pre><code>npm run -s keyhold -- dashboard link --workspace &lt;workspace id&gt;</code></pre>
<p>(in the container image: <code>keyhold dashboard link --workspace &lt;workspace id&gt;</code>) or, to see every
workspace, <code>npm run -s keyhold -- dashboard link --operator</code>, and open the link it prints.
A link signs in once and expires after 10 minutes; a session lasts 12 hours.</p>
</main>`,
  );
}

/** The page of a signed-in user who may see no workspace, naming the email they signed in with. */
export function noAccessPage(email: string | undefined, reason: 'unverified' | 'no-membership'): Html {
  const why =
    reason === 'unverified'
      ? html`The sign-in provider has not verified the email ${email ? html`<strong>${email}</strong>` : 'of this account'}, and only a verified email is let in.`
      : html`You signed in as <strong>${email}</strong>, which is not a member of any workspace. Ask an operator or a workspace admin to add it on the workspace's Members page.`;
  return document(
    'No access',
    html`<main id="main" class="narrow">
<h1>No access</h1>
<p role="alert">${why}</p>
<p><a href="/dashboard/sign-in">Back to sign-in</a></p>
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
