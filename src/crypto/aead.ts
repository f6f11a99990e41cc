import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * AES-256-GCM, the one cipher of the vault (docs/secrets-at-rest.md): both of its layers, a data key wrapped under a master
 * key and a secret sealed under a data key, are `base64(nonce(12) | ciphertext | tag(16))` with a fresh
 * random nonce, and bind their context as additional authenticated data.
 */

/** The size of every key: master keys and data keys alike. */
export const KEY_BYTES = 32;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/** The additional authenticated data of a wrapped data key: its workspace and id. */
export const wrapAad = (workspaceId: string, dataKeyId: string): Buffer => Buffer.from(`keyhold/v1/data-key\0${workspaceId}\0${dataKeyId}`);
/** The additional authenticated data of a sealed secret: its workspace and data-key id. */
export const sealAad = (workspaceId: string, dataKeyId: string): Buffer => Buffer.from(`keyhold/v1/secret\0${workspaceId}\0${dataKeyId}`);

/** `base64(nonce(12) | ciphertext | tag(16))` of `plaintext` under `key`, bound to `aad`. */
export function seal(key: Buffer, plaintext: Buffer, aad: Buffer): string {
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, nonce, { authTagLength: TAG_BYTES });
  cipher.setAAD(aad);
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([nonce, body, cipher.getAuthTag()]).toString('base64');
}

/** The plaintext, or undefined when the input is malformed or does not authenticate under this key and context. */
export function open(key: Buffer, sealed: string, aad: Buffer): Buffer | undefined {
  const buf = Buffer.from(sealed, 'base64');
  if (buf.length < NONCE_BYTES + TAG_BYTES) return undefined;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, buf.subarray(0, NONCE_BYTES), { authTagLength: TAG_BYTES });
    decipher.setAAD(aad);
    decipher.setAuthTag(buf.subarray(buf.length - TAG_BYTES));
    return Buffer.concat([decipher.update(buf.subarray(NONCE_BYTES, buf.length - TAG_BYTES)), decipher.final()]);
  } catch {
    return undefined;
  }
}
