import { createPublicKey, type KeyObject } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { AppError } from '../../domain/errors.ts';

/** Where GitHub's secret scanning signing keys come from: a file (GitHub's document, saved) or their URL. */
export interface GithubKeysLocation {
  keysFile?: string;
  keysUrl: string;
}

/** How long a fetch of the keys document may take before the report is answered 503 (GitHub retries). */
export const KEYS_FETCH_TIMEOUT_MS = 3_000;
/** A reload on an unknown identifier happens at most this often, so forged identifiers cannot make us hammer GitHub. */
export const KEYS_RELOAD_INTERVAL_MS = 60_000;
/** The keys document is a few KiB; anything larger is not it. */
const MAX_KEYS_DOCUMENT_BYTES = 256 * 1024;

/**
 * GitHub's secret scanning public keys by identifier (`{"public_keys":[{"key_identifier","key","is_current"}]}`),
 * loaded on first use and cached. An identifier not in the cache reloads the document, at most once per
 * KEYS_RELOAD_INTERVAL_MS (GitHub rotates keys rarely; a new one appears in the document before it signs).
 * Only P-256 keys are kept: GitHub signs with ECDSA P-256 / SHA-256.
 */
export class GithubPublicKeys {
  readonly #location: GithubKeysLocation;
  readonly #now: () => number;
  #keys = new Map<string, KeyObject>();
  #loadedAt = Number.NEGATIVE_INFINITY;
  #loading: Promise<void> | undefined;
  /** The last failed load: within KEYS_RELOAD_INTERVAL_MS of it, an unknown identifier is a 503 without another fetch. */
  #failure: { at: number; error: AppError } | undefined;

  constructor(location: GithubKeysLocation, now: () => number = Date.now) {
    this.#location = location;
    this.#now = now;
  }

  /** The key named `identifier`, or undefined when GitHub's document does not list it. Throws 503 when the document cannot be read. */
  async keyFor(identifier: string): Promise<KeyObject | undefined> {
    const known = this.#keys.get(identifier);
    if (known || this.#now() - this.#loadedAt < KEYS_RELOAD_INTERVAL_MS) return known;
    if (this.#failure && this.#now() - this.#failure.at < KEYS_RELOAD_INTERVAL_MS) throw this.#failure.error;
    this.#loading ??= this.#reload()
      .catch((error: AppError) => {
        this.#failure = { at: this.#now(), error };
        throw error;
      })
      .finally(() => {
        this.#loading = undefined;
      });
    await this.#loading;
    return this.#keys.get(identifier);
  }

  async #reload(): Promise<void> {
    const text = await this.#read();
    try {
      this.#keys = parseKeysDocument(text);
    } catch (err) {
      throw this.#unavailable(err);
    }
    this.#loadedAt = this.#now();
    this.#failure = undefined;
  }

  /** Fails the report fast with 503 (GitHub sends it again later); the cause names the source, never a secret. */
  #unavailable(err: unknown): AppError {
    const { keysFile, keysUrl } = this.#location;
    return new AppError(
      'upstream/unavailable',
      `GitHub's secret scanning keys could not be read from ${keysFile ?? keysUrl}: ${(err as Error).message}`,
    );
  }

  async #read(): Promise<string> {
    const { keysFile, keysUrl } = this.#location;
    try {
      if (keysFile) return await readFile(keysFile, 'utf8');
      const res = await fetch(keysUrl, {
        headers: { accept: 'application/json' },
        signal: AbortSignal.timeout(KEYS_FETCH_TIMEOUT_MS),
      });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const text = await res.text();
      if (text.length > MAX_KEYS_DOCUMENT_BYTES) throw new Error('document too large');
      return text;
    } catch (err) {
      throw this.#unavailable(err);
    }
  }
}

/** The P-256 keys of GitHub's keys document by identifier; entries that are not such keys are left out. */
export function parseKeysDocument(text: string): Map<string, KeyObject> {
  const keys = new Map<string, KeyObject>();
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new Error('the keys document is not JSON');
  }
  const entries = (doc as { public_keys?: unknown })?.public_keys;
  if (!Array.isArray(entries)) throw new Error('the keys document has no public_keys array');
  for (const entry of entries as Array<{ key_identifier?: unknown; key?: unknown }>) {
    if (typeof entry?.key_identifier !== 'string' || typeof entry.key !== 'string') continue;
    try {
      const key = createPublicKey(entry.key);
      if (key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1') keys.set(entry.key_identifier, key);
    } catch {
      // Not a PEM public key: GitHub never lists one, and a bad entry must not hide the good ones.
    }
  }
  return keys;
}
