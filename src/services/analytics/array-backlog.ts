import type { Backlog } from './event-queue.ts';

/** An EventQueue's events as they were recorded, in an array; a batch is an array of them. */
export class ArrayBacklog<E> implements Backlog<E, E[]> {
  /** Held events are `#events[#head…]`: dropping the oldest only moves `#head`. */
  #events: E[] = [];
  #head = 0;

  get length(): number {
    return this.#events.length - this.#head;
  }

  push(e: E): void {
    this.#events.push(e);
  }

  dropOldest(n: number): void {
    for (let i = 0; i < n; i++) (this.#events as unknown[])[this.#head + i] = undefined;
    this.#head += n;
    // Compact once the dropped prefix is half the array, so memory stays within what is held.
    if (this.#head > 1024 && this.#head * 2 > this.#events.length) this.#rest();
  }

  take(n: number): E[] {
    const end = this.#head + n;
    const batch = this.#head === 0 && end === this.#events.length ? this.#events : this.#events.slice(this.#head, end);
    this.#head = end;
    this.#rest();
    return batch;
  }

  putBack(batch: E[]): void {
    this.#events = batch.concat(this.#head === 0 ? this.#events : this.#events.slice(this.#head));
    this.#head = 0;
  }

  /** Keeps only the held events, from index 0. */
  #rest(): void {
    this.#events = this.#head === this.#events.length ? [] : this.#events.slice(this.#head);
    this.#head = 0;
  }
}
