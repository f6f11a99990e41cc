/**
 * Counts per key (a client address) in fixed windows of `windowMs`. At most `maxKeys` keys are tracked (the
 * one whose window started first is dropped first), so the memory is bounded whatever the number of keys.
 */
export class WindowCounts {
  readonly #windowMs: number;
  readonly #maxKeys: number;
  readonly #windows = new Map<string, { window: number; count: number }>();

  constructor(windowMs: number, maxKeys: number) {
    this.#windowMs = windowMs;
    this.#maxKeys = maxKeys;
  }

  /** Counts one for `key` in the current window; returns its count there. */
  add(key: string, now = Date.now()): number {
    const window = Math.floor(now / this.#windowMs);
    const entry = this.#windows.get(key);
    if (entry && entry.window === window) return ++entry.count;
    this.#windows.delete(key);
    if (this.#windows.size >= this.#maxKeys) this.#windows.delete(this.#windows.keys().next().value!);
    this.#windows.set(key, { window, count: 1 });
    return 1;
  }

  /** The count of `key` in the current window, without counting. */
  get(key: string, now = Date.now()): number {
    const entry = this.#windows.get(key);
    return entry !== undefined && entry.window === Math.floor(now / this.#windowMs) ? entry.count : 0;
  }

  /** Seconds until the current window ends (the Retry-After of a refused request). */
  retryAfterSeconds(now = Date.now()): number {
    return Math.max(1, Math.ceil((this.#windowMs - (now % this.#windowMs)) / 1000));
  }
}
