/**
 * Requests allowed per client address in fixed windows, for a route that no root key guards. At most
 * `maxAddresses` addresses are tracked (the oldest window is dropped first), so the memory is bounded.
 */
export class AddressLimiter {
  readonly #limit: number;
  readonly #windowMs: number;
  readonly #maxAddresses: number;
  readonly #windows = new Map<string, { window: number; count: number }>();

  constructor(limit: number, windowMs = 60_000, maxAddresses = 10_000) {
    this.#limit = limit;
    this.#windowMs = windowMs;
    this.#maxAddresses = maxAddresses;
  }

  /** Counts a request from `address`: false when it is over the limit of the current window. */
  take(address: string, now = Date.now()): boolean {
    const window = Math.floor(now / this.#windowMs);
    const entry = this.#windows.get(address);
    if (entry && entry.window === window) return ++entry.count <= this.#limit;
    this.#windows.delete(address);
    if (this.#windows.size >= this.#maxAddresses) this.#windows.delete(this.#windows.keys().next().value!);
    this.#windows.set(address, { window, count: 1 });
    return this.#limit >= 1;
  }

  /** Seconds until the current window ends (the Retry-After of a refused request). */
  retryAfterSeconds(now = Date.now()): number {
    return Math.max(1, Math.ceil((this.#windowMs - (now % this.#windowMs)) / 1000));
  }
}
