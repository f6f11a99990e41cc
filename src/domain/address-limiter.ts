/**
 * Events counted per client address in fixed windows of `windowMs`, with a limit: an address that reached
 * `limit` events in the current window is over it until the window ends. What is counted is the caller's
 * choice: every request of a route no root key guards (`take`), or only failed root-key authentications
 * (`isOver` before the work, `count` after a failure).
 *
 * At most `maxAddresses` addresses are tracked (the one whose window started first is dropped first), so the
 * memory is bounded whatever the number of addresses.
 */
export class AddressLimiter {
  readonly #limit: number;
  readonly #windowMs: number;
  readonly #maxAddresses: number;
  readonly #windows = new Map<string, { window: number; count: number }>();

  /** `limit`: events allowed per address and window; 0: no limit (nothing is counted). */
  constructor(limit: number, { windowMs = 60_000, maxAddresses = 10_000 }: { windowMs?: number; maxAddresses?: number } = {}) {
    this.#limit = limit;
    this.#windowMs = windowMs;
    this.#maxAddresses = maxAddresses;
  }

  /** Whether `address` reached its limit in the current window (nothing is counted). */
  isOver(address: string, now = Date.now()): boolean {
    return this.#limit !== 0 && this.countOf(address, now) >= this.#limit;
  }

  /** Counts one event from `address` in the current window. */
  count(address: string, now = Date.now()): void {
    if (this.#limit === 0) return;
    const window = Math.floor(now / this.#windowMs);
    const entry = this.#windows.get(address);
    if (entry && entry.window === window) {
      entry.count++;
      return;
    }
    this.#windows.delete(address);
    if (this.#windows.size >= this.#maxAddresses) this.#windows.delete(this.#windows.keys().next().value!);
    this.#windows.set(address, { window, count: 1 });
  }

  /** A request from `address`: counted and true, or false (not counted) when the address is over its limit. */
  take(address: string, now = Date.now()): boolean {
    if (this.isOver(address, now)) return false;
    this.count(address, now);
    return true;
  }

  /** The events counted for `address` in the current window. */
  countOf(address: string, now = Date.now()): number {
    const entry = this.#windows.get(address);
    return entry !== undefined && entry.window === Math.floor(now / this.#windowMs) ? entry.count : 0;
  }

  /** Seconds until the current window ends (the Retry-After of a refused request), at least 1. */
  retryAfterSeconds(now = Date.now()): number {
    return Math.max(1, Math.ceil((this.#windowMs - (now % this.#windowMs)) / 1000));
  }
}
