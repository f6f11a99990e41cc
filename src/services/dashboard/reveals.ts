import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import type { Db } from '../../store/store.ts';

/**
 * What a create form made (a new root key or key with its secret, a new migration, a webhook endpoint's signing secret), kept for the page the form
 * redirects to (post/redirect/get) and shown there once: reloading that page, or posting nothing again, never
 * shows it twice nor creates a second one. One value per session; a newer one replaces it.
 *
 * It is stored encrypted (AES-256-GCM) under a key derived from the session's token, which only the browser
 * holds (the store keeps the token's hash): the row alone never discloses a secret, and it is readable by
 * that session only.
 */
export interface Reveal {
  kind: 'root-key' | 'key' | 'migration' | 'webhook-endpoint';
  /** Where it is shown (the page the form redirects to). */
  path: string;
  values: Record<string, string>;
}

const keyOf = (sessionToken: string): Buffer => createHmac('sha256', sessionToken).update('keyhold-dashboard-reveal').digest();

export async function stashReveal(db: Db, session: { sessionId: string; token: string }, reveal: Reveal): Promise<void> {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyOf(session.token), iv);
  const sealed = Buffer.concat([cipher.update(JSON.stringify(reveal), 'utf8'), cipher.final()]);
  const text = [iv, cipher.getAuthTag(), sealed].map((b) => b.toString('base64url')).join('.');
  await db.updateTable('dashboard_sessions').set({ reveal: text }).where('id', '=', session.sessionId).execute();
}

/**
 * The session's stashed value of this kind for this page, removed as it is read (a conditional update: of two
 * concurrent loads, one shows it). Undefined when there is none, it is for another page, or another load took it.
 */
export async function takeReveal(
  db: Db,
  session: { sessionId: string; token: string },
  kind: Reveal['kind'],
  path: string,
): Promise<Reveal | undefined> {
  const row = await db.selectFrom('dashboard_sessions').select('reveal').where('id', '=', session.sessionId).executeTakeFirst();
  if (!row?.reveal) return undefined;
  let reveal: Reveal;
  try {
    const [iv, tag, sealed] = row.reveal.split('.').map((p) => Buffer.from(p, 'base64url'));
    const decipher = createDecipheriv('aes-256-gcm', keyOf(session.token), iv);
    decipher.setAuthTag(tag);
    reveal = JSON.parse(Buffer.concat([decipher.update(sealed), decipher.final()]).toString('utf8')) as Reveal;
  } catch {
    return undefined;
  }
  if (reveal.kind !== kind || reveal.path !== path) return undefined;
  const taken = await db
    .updateTable('dashboard_sessions')
    .set({ reveal: null })
    .where('id', '=', session.sessionId)
    .where('reveal', '=', row.reveal)
    .executeTakeFirst();
  return taken.numUpdatedRows === 1n ? reveal : undefined;
}
