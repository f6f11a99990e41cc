import { WindowCounts } from '../domain/window-counts.ts';

/**
 * Requests allowed per client address in fixed windows, for a route that no root key guards. At most
 * `maxAddresses` addresses are tracked (the oldest window is dropped first), so the memory is bounded.
 */
export class AddressLimiter {
  readonly #limit: number;
  readonly #counts: WindowCounts;

  constructor(limit: number, windowMs = 60_000, maxAddresses = 10_000) {
    this.#limit = limit;
    this.#counts = new WindowCounts(windowMs, maxAddresses);
  }

  /** Counts a request from `address`: false when it is over the limit of the current window. */
  take(address: string, now = Date.now()): boolean {
    return this.#counts.add(address, now) <= this.#limit;
  }

  /** Seconds until the current window ends (the Retry-After of a refused request). */
  retryAfterSeconds(now = Date.now()): number {
    return this.#counts.retryAfterSeconds(now);
  }
}
