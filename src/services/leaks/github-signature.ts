import { verify } from 'node:crypto';
import { AppError } from '../../domain/errors.ts';
import type { GithubPublicKeys } from './github-public-keys.ts';

/** Longest identifier and signature header values looked at (GitHub's are ~64 and ~100 characters). */
const MAX_HEADER_LENGTH = 512;

/**
 * Checks that `body` (the raw bytes, as sent) is signed by GitHub: `Github-Public-Key-Signature` is base64 DER
 * ECDSA over SHA-256 of the body, made with the P-256 key `Github-Public-Key-Identifier` names in GitHub's keys
 * document. Throws 401 `auth/invalid-signature` for a missing header, an unknown identifier or a signature that
 * does not verify; 503 when the keys document cannot be read.
 */
export async function verifyGithubSignature(
  keys: GithubPublicKeys,
  identifier: string | string[] | undefined,
  signature: string | string[] | undefined,
  body: string,
): Promise<void> {
  if (typeof identifier !== 'string' || typeof signature !== 'string' || identifier === '' || signature === '') {
    throw new AppError('auth/invalid-signature', 'Github-Public-Key-Identifier and Github-Public-Key-Signature headers are required');
  }
  if (identifier.length > MAX_HEADER_LENGTH || signature.length > MAX_HEADER_LENGTH) {
    throw new AppError('auth/invalid-signature', 'The signature headers are too long');
  }
  const key = await keys.keyFor(identifier);
  if (!key) throw new AppError('auth/invalid-signature', 'Github-Public-Key-Identifier names no key of GitHub’s secret scanning keys');
  let valid = false;
  try {
    valid = verify('sha256', Buffer.from(body, 'utf8'), { key, dsaEncoding: 'der' }, Buffer.from(signature, 'base64'));
  } catch {
    valid = false; // not a DER signature at all
  }
  if (!valid) throw new AppError('auth/invalid-signature', 'Github-Public-Key-Signature does not verify for this body');
}
