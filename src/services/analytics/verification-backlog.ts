import type { VerificationEvent } from '../verification/verification-recorder.ts';
import type { Backlog } from './event-queue.ts';
import { CODE_INDEX, NUMBERS, REFS, unpackVerifications, type PackedVerifications } from './packed-verifications.ts';

/** Events the columns have room for at first; they double when full. */
const FIRST_ROOM = 1024;
const NEWLINE = 0x0a;

/**
 * The VerificationRecorder's queued events, kept in columns as they are recorded, not as objects. Events held as
 * objects until their flush (up to 10,000, for up to a second) outlived V8's young generation: each was copied,
 * promoted and marked, about half of the GC that recording cost the thread answering verifications
 * (docs/performance.md). Here an event's numbers go in typed arrays, its strings are references in one array (a
 * key's ids are the key cache's strings: nothing new is held), and its request id is UTF-8 bytes. A batch is taken
 * as a PackedVerifications of its own: its strings are interned then, once each, for that batch only.
 *
 * Memory: the columns double when full, unless half of their events were dropped or taken (then the held ones move
 * to the front): at most about four times the recorder's capacity in slots (about 80 bytes each with a request id),
 * kept once grown. A dropped or taken event's references are cleared at once, so only held events keep strings.
 */
export class VerificationBacklog implements Backlog<VerificationEvent, PackedVerifications> {
  /** Per event (REFS each): key, workspace, API, identity, external id, tags (JSON); undefined for none. */
  #strings: Array<string | undefined> = [];
  #numbers = new Float64Array(FIRST_ROOM * NUMBERS);
  #codes = new Uint8Array(FIRST_ROOM);
  /** Every held event's request id followed by a newline, back to back, UTF-8: event i's are `#idEnds[i-1]…#idEnds[i]`. */
  #ids = Buffer.allocUnsafe(FIRST_ROOM * 32);
  #idEnds = new Uint32Array(FIRST_ROOM);
  /** Held events are #head…#tail. */
  #head = 0;
  #tail = 0;

  get length(): number {
    return this.#tail - this.#head;
  }

  push(e: VerificationEvent): void {
    if (this.#tail === this.#codes.length) this.#makeRoom();
    const i = this.#tail++;
    const tags = e.tags && e.tags.length > 0 ? JSON.stringify(e.tags) : undefined;
    // Appended in order: the array stays packed (index i * REFS is its length here).
    this.#strings.push(e.keyId, e.workspaceId, e.apiId, e.identityId ?? undefined, e.externalId ?? undefined, tags);
    const x = i * NUMBERS;
    this.#numbers[x] = e.time;
    this.#numbers[x + 1] = e.spentCredits ?? 0;
    this.#numbers[x + 2] = e.latency ?? 0;
    this.#codes[i] = CODE_INDEX.get(e.code)!;
    const requestId = e.requestId ?? '';
    let at = this.#idStart(i);
    const need = at + requestId.length * 3 + 1;
    if (need > this.#ids.length) {
      const ids = Buffer.allocUnsafe(Math.max(need, this.#ids.length * 2));
      this.#ids.copy(ids, 0, 0, at);
      this.#ids = ids;
    }
    at += this.#ids.write(requestId, at, 'utf8');
    this.#ids[at] = NEWLINE;
    this.#idEnds[i] = at + 1;
  }

  dropOldest(n: number): void {
    this.#strings.fill(undefined, this.#head * REFS, (this.#head + n) * REFS);
    this.#head += n;
    if (this.#head === this.#tail) this.#clear();
  }

  take(n: number): PackedVerifications {
    const from = this.#head;
    const to = from + n;
    const strings: string[] = [];
    const index = new Map<string, number>();
    const refs = new Int32Array(n * REFS);
    for (let r = 0; r < refs.length; r++) {
      const s = this.#strings[from * REFS + r];
      if (s === undefined) {
        refs[r] = -1;
        continue;
      }
      let i = index.get(s);
      if (i === undefined) {
        i = strings.push(s) - 1;
        index.set(s, i);
      }
      refs[r] = i;
    }
    const batch: PackedVerifications = {
      strings,
      refs,
      numbers: this.#numbers.slice(from * NUMBERS, to * NUMBERS),
      codes: this.#codes.slice(from, to),
      requestIds: n === 0 ? '' : this.#ids.toString('utf8', this.#idStart(from), this.#idEnds[to - 1]),
    };
    this.dropOldest(n);
    return batch;
  }

  /** Only after a failed write: the events are unpacked and recorded again, the batch's first, then those held. */
  putBack(batch: PackedVerifications): void {
    const rest = this.take(this.length);
    for (const e of unpackVerifications(batch)) this.push(e);
    for (const e of unpackVerifications(rest)) this.push(e);
  }

  #idStart(i: number): number {
    return i === 0 ? 0 : this.#idEnds[i - 1];
  }

  /**
   * The columns full: when at least half their events were dropped, the held ones moved to the front; else twice
   * the room. (Moving fewer would move all of them again for every few events recorded while the queue is full.)
   */
  #makeRoom(): void {
    const { length } = this;
    if (this.#head * 2 < this.#tail) {
      const room = this.#codes.length * 2;
      this.#numbers = grown(this.#numbers, room * NUMBERS);
      this.#codes = grown(this.#codes, room);
      this.#idEnds = grown(this.#idEnds, room);
      return;
    }
    const idFrom = this.#idStart(this.#head);
    this.#strings.copyWithin(0, this.#head * REFS, this.#tail * REFS);
    this.#strings.length = length * REFS;
    this.#numbers.copyWithin(0, this.#head * NUMBERS, this.#tail * NUMBERS);
    this.#codes.copyWithin(0, this.#head, this.#tail);
    this.#ids.copyWithin(0, idFrom, this.#idStart(this.#tail));
    for (let i = 0; i < length; i++) this.#idEnds[i] = this.#idEnds[this.#head + i] - idFrom;
    this.#head = 0;
    this.#tail = length;
  }

  #clear(): void {
    this.#head = this.#tail = 0;
    this.#strings.length = 0;
  }
}

/** `batch` in columns (PackedVerifications). */
export function packVerifications(batch: readonly VerificationEvent[]): PackedVerifications {
  const backlog = new VerificationBacklog();
  for (const e of batch) backlog.push(e);
  return backlog.take(batch.length);
}

/** A copy of `a` with room for `n` elements. */
function grown<A extends Float64Array | Uint8Array | Uint32Array>(a: A, n: number): A {
  const b = new (a.constructor as new (n: number) => A)(n);
  b.set(a);
  return b;
}
