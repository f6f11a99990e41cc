import { migrationRecord } from '../../../services/migrations/list-migrations.ts';
import type { PageContext, PageResult } from '../context.ts';
import { facts, when } from '../components.ts';
import { html, type Html } from '../html.ts';
import { layout } from '../layout.ts';
import { cursorsOf, migrationProgress, type ItemCursors, type LiveItem, type Progress } from './migration-progress.ts';

export const MIGRATIONS_PATH = '/dashboard/migrations';

const COUNTS: Array<[keyof Progress & ('enqueued' | 'pending' | 'migrated' | 'failed'), string]> = [
  ['enqueued', 'enqueued'],
  ['pending', 'pending'],
  ['migrated', 'migrated'],
  ['failed', 'failed'],
];

/** The address of a migration's page or of its progress (JSON), with the lists' cursors. */
function addressOf(migrationId: string, cursors: ItemCursors, progress = false): string {
  const q = new URLSearchParams();
  if (cursors.failuresAfter !== undefined) q.set('failuresAfter', String(cursors.failuresAfter));
  if (cursors.migratedAfter !== undefined) q.set('migratedAfter', String(cursors.migratedAfter));
  const s = q.toString();
  return `${MIGRATIONS_PATH}/${encodeURIComponent(migrationId)}${progress ? '/progress' : ''}${s ? `?${s}` : ''}`;
}

/** GET /dashboard/migrations/:migrationId/progress: what the page's script refreshes (assets/dashboard.js, data-live). */
export async function progressJson(ctx: PageContext): Promise<PageResult> {
  return { json: await migrationProgress(ctx, ctx.params.migrationId, cursorsOf(ctx.query)) };
}

/**
 * GET /dashboard/migrations/:migrationId: the record, and the live part (status, counts, failures with their
 * reasons, links from migrated items to their keys), which refreshes itself every second without a reload.
 */
export async function migrationPage(ctx: PageContext): Promise<PageResult> {
  const migrationId = ctx.params.migrationId;
  const cursors = cursorsOf(ctx.query);
  const [record, progress] = await Promise.all([
    migrationRecord(ctx.deps.store.db, ctx.caller, migrationId),
    migrationProgress(ctx, migrationId, cursors),
  ]);
  const main = html`${facts([
    ['ID', html`<code>${record.migrationId}</code>`],
    ['Name', record.name ?? html`<span class="muted">—</span>`],
    ['Created', when(record.createdAt)],
  ])}
<p>Keys are enqueued into it with <code>migrations.enqueueKeys</code> (a root key of this workspace, this migration’s ID and an API’s ID);
workers import them in the background. This page follows them as they end.</p>
<section data-live="${addressOf(migrationId, cursors, true)}" aria-labelledby="progress-title">
<h2 id="progress-title">Progress</h2>
<p>Status: <strong data-field="status">${progress.status}</strong></p>
<div class="counts">${COUNTS.map(
    ([member, label]) =>
      html`<div><strong data-testid="migration-${member}" data-field="${member}">${progress[member]}</strong> ${label}</div>`,
  )}</div>
${itemList('failures', 'Failures', ['failuresSummary', progress.failuresSummary], ['failureItems', progress.failureItems])}
${listPager('failures', 'Failures', migrationId, cursors, { ...cursors, failuresAfter: progress.failuresNext }, 'failuresAfter')}
${itemList('migrated', 'Migrated keys', ['migratedSummary', progress.migratedSummary], ['migratedItems', progress.migratedItems])}
${listPager('migrated', 'Migrated keys', migrationId, cursors, { ...cursors, migratedAfter: progress.migratedNext }, 'migratedAfter')}
</section>
<p><a href="${MIGRATIONS_PATH}">All migrations</a></p>`;
  return { page: layout({ session: ctx.session, csrf: ctx.csrf, path: MIGRATIONS_PATH }, `Migration ${migrationId}`, main) };
}

/** A list the script keeps current: a heading, the line saying how much of it is shown, and its items. */
function itemList(id: string, title: string, [summaryMember, summary]: [string, string], [listMember, items]: [string, LiveItem[]]): Html {
  return html`<h2 id="${id}-title">${title}</h2>
<p data-field="${summaryMember}">${summary}</p>
<ul aria-labelledby="${id}-title" data-list="${listMember}">${items.map((i) =>
    i.href ? html`<li><a href="${i.href}">${i.text}</a></li>` : html`<li>${i.text}</li>`,
  )}</ul>`;
}

/**
 * Links to the first and next page of one list (the other list stays where it is). A navigation landmark
 * named after the list, so that two of them on a page are told apart.
 */
function listPager(
  id: string,
  title: string,
  migrationId: string,
  current: ItemCursors,
  next: ItemCursors,
  member: keyof ItemCursors,
): Html {
  const hasNext = next[member] !== undefined;
  if (!hasNext && current[member] === undefined) return html``;
  const first = addressOf(migrationId, { ...current, [member]: undefined });
  return html`<nav class="pager" aria-label="${title} pages" id="${id}-pages">${
    current[member] !== undefined ? html`<a href="${first}">First page of ${title.toLowerCase()}</a>` : ''
  }${hasNext ? html`<a href="${addressOf(migrationId, next)}">Next page of ${title.toLowerCase()}</a>` : ''}</nav>`;
}
