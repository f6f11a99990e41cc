import { BlockList, isIP } from 'node:net';
import { lookup } from 'node:dns/promises';
import { invalid } from '../../domain/errors.ts';

/**
 * Server-side request forgery: a webhook URL must not make Keyhold call into its own network. Only `https`
 * URLs without credentials, to hosts whose every address is public; checked when an endpoint is saved and
 * again at every delivery, on the addresses the delivery then connects to (a name may resolve differently by
 * then: DNS rebinding). `allowPrivate` lifts both rules (private networks, tests).
 */
const BLOCKED = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], // unspecified, "this network"
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata services
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
  ['224.0.0.0', 3], // multicast, reserved, broadcast
] as const)
  BLOCKED.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
] as const)
  BLOCKED.addSubnet(net, prefix, 'ipv6');

/** Whether `address` (an IP literal) is one a webhook may not reach. IPv4-mapped IPv6 addresses are judged as IPv4. */
export function isBlockedAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return BLOCKED.check(mapped[1], 'ipv4');
  const family = isIP(address);
  if (family === 0) return true;
  return BLOCKED.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** Why `url` may not be a webhook URL by its form alone (scheme, credentials), or null. */
export function urlFormProblem(url: string, allowPrivate: boolean): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'is not an absolute URL';
  }
  if (parsed.protocol !== 'https:' && !(allowPrivate && parsed.protocol === 'http:')) return 'must be an https URL';
  if (parsed.username || parsed.password) return 'must not contain credentials';
  if (!parsed.hostname) return 'must name a host';
  return null;
}

/** The host of a URL as the resolver takes it (IPv6 literals without their brackets). */
export const hostOf = (url: URL): string => url.hostname.replace(/^\[(.*)\]$/, '$1');

/** A host that may not be reached, or that does not resolve. */
export class UnsafeAddressError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnsafeAddressError';
  }
}

/**
 * The addresses of `host` (an IP literal is its own), every one checked; throws UnsafeAddressError when it
 * does not resolve or any address is blocked (unless `allowPrivate`).
 */
export async function checkedAddresses(host: string, allowPrivate: boolean): Promise<Array<{ address: string; family: number }>> {
  let addresses: Array<{ address: string; family: number }>;
  if (isIP(host)) addresses = [{ address: host, family: isIP(host) }];
  else {
    try {
      addresses = await lookup(host, { all: true, verbatim: true });
    } catch {
      throw new UnsafeAddressError(`the host ${host} does not resolve`);
    }
  }
  if (addresses.length === 0) throw new UnsafeAddressError(`the host ${host} does not resolve`);
  if (!allowPrivate) {
    const bad = addresses.find((a) => isBlockedAddress(a.address));
    if (bad)
      throw new UnsafeAddressError(`the host ${host} resolves to ${bad.address}, a loopback, private, link-local or unspecified address`);
  }
  return addresses;
}

/** A 400 unless `url` may receive webhooks or usage reports: its form, then every address its host resolves to (README: SSRF). */
export async function requireSafeUrl(url: string, settings: { allowPrivate: boolean }, path = '/url'): Promise<void> {
  const problem = urlFormProblem(url, settings.allowPrivate);
  if (problem) throw invalid([{ path, message: problem }]);
  try {
    await checkedAddresses(hostOf(new URL(url)), settings.allowPrivate);
  } catch (err) {
    if (err instanceof UnsafeAddressError) throw invalid([{ path, message: err.message }]);
    throw err;
  }
}
