import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';

/** A P-256 key pair standing in for GitHub's secret scanning signing key, and its keys document. */
export interface GithubSigner {
  identifier: string;
  privateKey: KeyObject;
  /** GitHub's `{"public_keys":[{"key_identifier","key","is_current"}]}` with this key. */
  document: string;
  /** The document written to a file (KEYHOLD_GITHUB_SECRET_SCANNING_KEYS_FILE). */
  file: string;
  /** Headers GitHub sends with `body`, signed by this key (or by `other`'s private key under this identifier). */
  headers(body: string, other?: KeyObject): Record<string, string>;
}

export function githubSigner(identifier = 'bcb53661c06b4728e59d897fb6165d5c9cda0fd9cdf9d09ead458168deb7518c'): GithubSigner {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const document = JSON.stringify({
    public_keys: [{ key_identifier: identifier, key: publicKey.export({ type: 'spki', format: 'pem' }), is_current: true }],
  });
  const file = join(mkdtempSync(join(tmpdir(), 'gh-keys-')), 'public_keys.json');
  writeFileSync(file, document);
  return {
    identifier,
    privateKey,
    document,
    file,
    headers: (body, other) => ({
      'content-type': 'application/json',
      'github-public-key-identifier': identifier,
      'github-public-key-signature': sign('sha256', Buffer.from(body), { key: other ?? privateKey, dsaEncoding: 'der' }).toString('base64'),
    }),
  };
}

/** A local HTTP server answering GET with `document()`, counting requests; `hang` makes it never answer. */
export async function keysServer(
  document: () => string,
): Promise<{ url: string; requests: () => number; hang(on: boolean): void; close(): Promise<void> }> {
  let count = 0;
  let hanging = false;
  const server: Server = createServer((_req, res) => {
    count++;
    if (hanging) return;
    res.setHeader('content-type', 'application/json');
    res.end(document());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/meta/public_keys/secret_scanning`,
    requests: () => count,
    hang: (on) => {
      hanging = on;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
