import { actorOf } from '../../../services/caller.ts';
import { listMigrations, type MigrationSummary } from '../../../services/migrations/list-migrations.ts';
import { createMigration } from '../../../services/migrations/migration-records.ts';
import { MIGRATION_ALGORITHMS } from '../../../services/migrations/hash-algorithms.ts';
import type { PageContext, PageResult, PageRouter } from '../context.ts';
import { csrfInput, pager, table, text, when } from '../components.ts';
import { html, type Html } from '../html.ts';
import { layout } from '../layout.ts';
import { MIGRATIONS_PATH as PATH, migrationPage, progressJson } from './migration-page.ts';

const PAGE_SIZE = 25;

/**
 * Migrations: the workspace's key migrations, creating one (no v1 operation creates a migration: the
 * service `keyhold migrations create` calls, audited as the session), and each one's live page.
 */
export default function migrationPages(router: PageRouter): void {
  router.get(PATH, async (ctx) => render(ctx, (await ctx.reveal.take('migration', PATH))?.values.migrationId));
  router.post(PATH, async (ctx) => {
    const algorithm = text(ctx.form.algorithm) || 'sha256';
    const created = await createMigration(ctx.deps.store.db, ctx.caller.workspaceId, undefined, actorOf(ctx.caller), algorithm);
    // Post/redirect/get: reloading the page it leads to creates no second migration.
    await ctx.reveal.put({ kind: 'migration', path: PATH, values: { migrationId: created.migrationId } });
    return { redirect: PATH };
  });
  router.get(`${PATH}/:migrationId`, migrationPage);
  router.get(`${PATH}/:migrationId/progress`, progressJson);
}

async function render(ctx: PageContext, createdId?: string): Promise<PageResult> {
  const cursor = createdId ? undefined : ctx.query.cursor;
  const page = await listMigrations(ctx.deps.store.db, ctx.caller, { limit: PAGE_SIZE, cursor });
  const rows = page.migrations.map((m) => [
    html`<a href="${PATH}/${m.migrationId}"><code>${m.migrationId}</code></a>${m.name ? html` ${m.name}` : ''}`,
    m.status,
    countsOf(m),
    when(m.createdAt),
  ]);
  const main = html`${createdId ? createdNotice(createdId) : ''}
<p>A migration imports keys that exist elsewhere (by their hashes, or their plaintexts when a vault is configured):
create one here, hand its ID to whoever enqueues the keys with <code>migrations.enqueueKeys</code>, and follow its progress on its page.</p>
<form method="post" action="${PATH}" class="actions">${csrfInput(ctx.csrf)}${algorithmSelect()}<button type="submit">Create migration</button></form>
${table('Migrations', ['ID', 'Status', 'Counts', 'Created'], rows, 'This workspace has no migrations yet.')}
${pager(PATH, { cursor }, page.cursor)}`;
  return { page: layout({ session: ctx.session, csrf: ctx.csrf, path: PATH }, 'Migrations', main) };
}

/** How the new migration's keys were hashed where they come from; Keyhold's own form first (the default). */
const algorithmSelect = (): Html =>
  html`<label for="migration-algorithm">Hash algorithm</label><select id="migration-algorithm" name="algorithm">${MIGRATION_ALGORITHMS.map(
    (a) => html`<option value="${a}"${a === 'sha256' ? html` selected` : ''}>${a}</option>`,
  )}</select>`;

const countsOf = (m: MigrationSummary): string =>
  `${m.counts.enqueued} enqueued, ${m.counts.pending} pending, ${m.counts.migrated} migrated, ${m.counts.failed} failed`;

/** After creating one: its ID, read-only and copyable, and the way to its page. */
function createdNotice(migrationId: string): Html {
  return html`<section class="notice" aria-labelledby="created-title">
<h2 id="created-title">Migration created</h2>
<div class="field"><label for="new-migration-id">Migration ID</label><input id="new-migration-id" readonly value="${migrationId}"></div>
<div class="actions"><button type="button" data-copy="new-migration-id" aria-describedby="copy-status">Copy</button><span id="copy-status" role="status"></span>
<a href="${PATH}/${migrationId}">Follow migration ${migrationId}</a></div>
</section>`;
}
