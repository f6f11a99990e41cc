import { createHmac, randomBytes } from 'node:crypto';

/** Random bytes of a signing secret (Standard Webhooks asks for 24 to 64). */
const SECRET_BYTES = 32;

/** A new signing secret: `whsec_` + base64 of 32 random bytes, as Standard Webhooks' libraries read it. */
export const newSigningSecret = (): string => `whsec_${randomBytes(SECRET_BYTES).toString('base64')}`;

/** `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">` under the secret's decoded bytes. */
export function signature(secret: string, id: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64')}`;
}

/** The `webhook-signature` header: one signature per secret, space-separated (several during a rotation). */
export const signatureHeader = (secrets: readonly string[], id: string, timestampSeconds: number, body: string): string =>
  secrets.map((s) => signature(s, id, timestampSeconds, body)).join(' ');
