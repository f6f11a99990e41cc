import { readFileSync } from 'node:fs';
import type { App } from '../types.ts';

/** The dashboard's script, style sheet and icon, read once at start (they are part of the source, not built). */
const ASSETS: Record<string, { type: string; body: string }> = {
  'dashboard.js': { type: 'text/javascript; charset=utf-8', body: readFileSync(new URL('./assets/dashboard.js', import.meta.url), 'utf8') },
  'dashboard.css': { type: 'text/css; charset=utf-8', body: readFileSync(new URL('./assets/dashboard.css', import.meta.url), 'utf8') },
  'favicon.svg': { type: 'image/svg+xml', body: readFileSync(new URL('./assets/favicon.svg', import.meta.url), 'utf8') },
};

/** Serves /dashboard/assets/<name> without a session (they hold no data). */
export function registerAssets(scope: App): void {
  scope.get('/assets/:name', { schema: { hide: true } }, async (request, reply) => {
    const asset = ASSETS[(request.params as { name: string }).name];
    if (!asset) return reply.code(404).type('text/plain; charset=utf-8').send('not found');
    return reply.header('cache-control', 'no-cache').type(asset.type).send(asset.body);
  });
}
