import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import axe from 'axe-core';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { JobQueue } from '../../src/jobs/job-queue.ts';
import { Worker } from '../../src/jobs/worker.ts';
import { WORKER_TASKS } from '../../src/services/migrations/migration-import-task.ts';
import { withDeadline } from '../../src/store/deadline.ts';
import { createSignInLink, type Audience } from '../../src/services/dashboard/sessions.ts';
import { OPERATOR, world, type World, type WorldOptions } from './harness.ts';
import { REPO_ROOT } from './repo.ts';

export const CHROMIUM = '/usr/bin/chromium';
/** Where screenshots of every page go (a CI artifact; not committed). */
export const SCREENSHOTS = join(REPO_ROOT, 'test-artifacts', 'dashboard');

/**
 * Debian's chromium, installed with apt-get when it is missing (never a browser download). Fails, with the
 * reason, when it cannot be installed: browser tests never skip.
 */
export function ensureChromium(): void {
  if (existsSync(CHROMIUM)) return;
  execFileSync('apt-get', ['install', '-y', '--no-install-recommends', 'chromium'], {
    stdio: 'inherit',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing after apt-get install chromium`);
}

/** Headless Debian chromium with the flags this machine's closed network needs. */
export async function launchBrowser(): Promise<Browser> {
  ensureChromium();
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/**
 * `start` and a browser, launched together. When either fails, the other is closed before the failure is rethrown:
 * a suite's `after` closes only what its `before` assigned, and a browser or a server left open holds the test
 * file's process.
 */
export async function startWithBrowser<T>(start: Promise<T>, close: (started: T) => Promise<unknown>): Promise<[T, Browser]> {
  const [started, browser] = await Promise.allSettled([start, launchBrowser()]);
  if (started.status === 'fulfilled' && browser.status === 'fulfilled') return [started.value, browser.value];
  if (browser.status === 'fulfilled') await closeBrowser(browser.value);
  if (started.status === 'fulfilled') await close(started.value);
  throw started.status === 'rejected' ? started.reason : (browser as PromiseRejectedResult).reason;
}

/** How long a browser gets to close before its processes are killed. */
const CLOSE_MS = 10_000;

/**
 * Closes a browser launched by launchBrowser. Chromium once never exited after its tests had passed (a fresh-clone
 * CI run: `browser.close()` waited with no timer, the test file's process kept a handle on chromium, and the run
 * sat idle until stopped), so after CLOSE_MS the chromium processes this process started are killed.
 */
export async function closeBrowser(browser: Browser | undefined): Promise<void> {
  if (!browser) return;
  const gaveUp = new Error(`the browser did not close within ${CLOSE_MS} ms`);
  try {
    await withDeadline(browser.close(), CLOSE_MS, () => gaveUp);
    return;
  } catch (err) {
    if (err !== gaveUp) throw err;
  }
  for (const pid of chromiumChildren()) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** The chromium processes whose parent is this process (Linux: /proc/<pid>/stat is `pid (comm) state ppid …`). */
function chromiumChildren(): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const m = /^\d+ \((.*)\) \S+ (\d+)/.exec(stat);
      if (m && Number(m[2]) === process.pid && /chrom/i.test(m[1])) pids.push(Number(entry));
    } catch {
      // the process ended meanwhile
    }
  }
  return pids;
}

/** A test world whose app listens on a local port, with a job worker (migrations import in the background). */
export interface DashboardWorld extends World {
  baseUrl: string;
  /** A one-time sign-in URL for the world's workspace, another one, or the operator. */
  link(audience?: Audience): Promise<string>;
}

/** `port` 0: any free one; `options.app`: more options of the app (single sign-on). */
export async function dashboardWorld(dialect: 'sqlite' | 'postgres', options: WorldOptions = {}, port = 0): Promise<DashboardWorld> {
  const w = await world(dialect, options);
  const address = await w.app.listen({ host: '127.0.0.1', port });
  const worker = new Worker(new JobQueue(w.store, WORKER_TASKS), { concurrency: 2, pollMs: 50 });
  worker.start();
  const close = w.close;
  return Object.assign(w, {
    baseUrl: address,
    async link(audience: Audience = { workspaceId: w.workspaceId }) {
      const { token } = await createSignInLink(w.store.db, audience, OPERATOR);
      return `${address}/dashboard/sign-in?token=${token}`;
    },
    async close() {
      await worker.stop();
      await close();
    },
  });
}

/** A browser context that reaches only loopback (a provider's login page asks for a web font, for one). */
export async function loopbackContext(browser: Browser): Promise<BrowserContext> {
  const context = await browser.newContext();
  await context.route(/^https?:\/\/(?!127\.0\.0\.1)/, (r) => r.abort());
  return context;
}

/** A dashboard page as the session `session` (its cookie's value) sees it, in-process: the cookie header, the page's CSRF token ('' when none) and body. */
export async function sessionPage(
  w: World,
  session: string,
  path = '/dashboard/apis',
): Promise<{ cookie: string; csrf: string; body: string }> {
  const cookie = `keyhold_session=${session}`;
  const page = await w.app.inject({ method: 'GET', url: path, headers: { cookie } });
  return { cookie, csrf: /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1] ?? '', body: page.body };
}

/** A dashboard session in-process, signed in as a user would: the link's token, the session's, and `path` as it sees it (sessionPage). */
export interface LinkSession {
  link: string;
  session: string;
  cookie: string;
  csrf: string;
  body: string;
}

/**
 * Signs in through the sign-in route (in-process, no browser) with a fresh one-time link for `audience` (the
 * world's workspace by default, `{ operator: true }` for an operator); then reads `path` as the session.
 */
export async function signInWithLink(
  w: World,
  audience: Audience = { workspaceId: w.workspaceId },
  path = '/dashboard/root-keys',
): Promise<LinkSession> {
  const { token: link } = await createSignInLink(w.store.db, audience, OPERATOR);
  const res = await w.app.inject({ method: 'GET', url: `/dashboard/sign-in?token=${link}` });
  assert.equal(res.statusCode, 303, 'the link signs in');
  const session = String(res.headers['set-cookie']).split(';')[0].slice('keyhold_session='.length);
  const page = await sessionPage(w, session, path);
  assert.ok(page.csrf, 'pages carry the CSRF token');
  return { link, session, ...page };
}

/** Console errors and failed page scripts of a page: a test asserts there are none. */
export function watchConsole(page: Page): string[] {
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(e.message));
  return errors;
}

/**
 * Checks the page as every page is checked: a screenshot saved as `<name>.png`, and an axe-core scan with no
 * serious or critical violation. axe runs through the DevTools protocol, which the page's CSP does not restrict.
 */
export async function checkPage(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
  if (!(await page.evaluate("'axe' in window"))) await page.evaluate(axe.source);
  // A string, evaluated in the page (this file is type-checked without the DOM's types).
  const violations = (await page.evaluate(`axe.run(document, { resultTypes: ['violations'] }).then((r) =>
    r.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => v.impact + ' ' + v.id + ': ' + v.help + ' at ' + v.nodes.map((n) => n.target.join(' ')).join(', ')))`)) as string[];
  assert.deepEqual(violations, [], `accessibility violations on ${name}`);
}

/** What the tests of one dashboard suite share: a world and a browser, and pages signed in to the world. */
export interface DashboardSuite {
  readonly world: DashboardWorld;
  readonly browser: Browser;
  /** A new page (a browser context of its own) signed in to the world's workspace, or `workspaceId`'s; `errors`: its console errors. */
  signedIn(workspaceId?: string): Promise<{ page: Page; errors: string[] }>;
}

/** Registers, in the calling `describe`, the start of a dashboard world and a browser before its tests and their close after. */
export function dashboardSuite(dialect: 'sqlite' | 'postgres', options: WorldOptions = {}): DashboardSuite {
  let world: DashboardWorld | undefined;
  let browser: Browser | undefined;
  before(async () => {
    [world, browser] = await startWithBrowser(dashboardWorld(dialect, options), (w) => w.close());
  });
  after(async () => {
    await closeBrowser(browser);
    await world?.close();
  });
  const started = <T>(value: T | undefined): T => {
    assert.ok(value, 'the suite has not started: use it inside its tests and hooks');
    return value;
  };
  return {
    get world() {
      return started(world);
    },
    get browser() {
      return started(browser);
    },
    async signedIn(workspaceId?: string) {
      const w = started(world);
      const page = await started(browser).newPage();
      const errors = watchConsole(page);
      await page.goto(await w.link({ workspaceId: workspaceId ?? w.workspaceId }));
      assert.equal(new URL(page.url()).pathname, '/dashboard/apis', 'signed in: on the first dashboard page');
      return { page, errors };
    },
  };
}
