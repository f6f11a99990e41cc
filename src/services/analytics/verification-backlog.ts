import type { VerificationEvent } from '../verification/verification-recorder.ts';
import type { Backlog } from './event-queue.ts';
import { CODE_INDEX, NUMBERS, REFS, type PackedVerifications } from './packed-verifications.ts';

/** Events the columns have room for at first; they double when full. */
const FIRST_ROOM = 1024;
/** The string table is rebuilt from the events held once it has grown by as many entries as events held, and this many more. */
const STRINGS_SLACK = 1024;
const NEWLINE = 0x0a;

/**
 * The VerificationRecorder's queued events, kept in the columns of a PackedVerifications batch as they are
 * recorded, not as objects. Events held as objects until their flush (up to 10,000, for up to a second) outlived
 * V8's young generation: each was copied, promoted and marked, about a quarter of what recording cost a cached
 * verification (docs/performance.md). Here an event is a few numbers in typed arrays, its strings are references
 * into one table (a key's ids are held once, whatever its events), and its request id is bytes; a batch is taken
 * as typed arrays of its own.
 *
 * Memory: the columns double when full, unless half their events were dropped (then the held ones move to the
 * front): at most about four times the recorder's capacity in slots (about 55 bytes each, and the request ids'
 * bytes), kept once grown; the string table is handed over with a batch that empties the backlog, and rebuilt from what is
 * held when a batch leaves events behind, when a failed batch comes back, and when it has grown by more entries
 * than events are held (events dropped while the store is down leave theirs behind): it holds at most the strings
 * of the events held, as many more, and STRINGS_SLACK; a rebuild's cost is spread over as many events recorded.
 */
export class VerificationBacklog implements Backlog<VerificationEvent, PackedVerifications> {
  #strings: string[] = [];
  #index = new Map<string, number>();
  /** Entries of the string table when it was last rebuilt (or emptied). */
  #rebuiltWith = 0;
  #refs = new Int32Array(FIRST_ROOM * REFS);
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
    const tags = e.tags && e.tags.length > 0 ? JSON.stringify(e.tags) : undefined;
    this.#add(
      e.keyId,
      e.workspaceId,
      e.apiId,
      e.identityId,
      e.externalId,
      tags,
      e.time,
      e.spentCredits ?? 0,
      e.latency ?? 0,
      CODE_INDEX.get(e.code)!,
      e.requestId ?? '',
    );
    if (this.#strings.length > this.#rebuiltWith + this.length + STRINGS_SLACK) this.#reintern();
  }

  dropOldest(n: number): void {
    this.#head += n;
    if (this.#head === this.#tail) this.#head = this.#tail = 0;
  }

  take(n: number): PackedVerifications {
    const from = this.#head;
    const to = from + n;
    const batch: PackedVerifications = {
      strings: this.#strings,
      refs: this.#refs.slice(from * REFS, to * REFS),
      numbers: this.#numbers.slice(from * NUMBERS, to * NUMBERS),
      codes: this.#codes.slice(from, to),
      requestIds: n === 0 ? '' : this.#ids.toString('utf8', this.#idStart(from), this.#idEnds[to - 1]),
    };
    this.#head = to;
    // The batch keeps the table it refers to; the events left behind get one of their own.
    if (to === this.#tail) this.#clear();
    else this.#reintern();
    return batch;
  }

  putBack(batch: PackedVerifications): void {
    const rest = this.take(this.length);
    this.#append(batch);
    this.#append(rest);
  }

  sizeOf(batch: PackedVerifications): number {
    return batch.codes.length;
  }

  #add(
    keyId: string,
    workspaceId: string,
    apiId: string,
    identityId: string | null | undefined,
    externalId: string | null | undefined,
    tags: string | undefined,
    time: number,
    spentCredits: number,
    latency: number,
    code: number,
    requestId: string,
  ): void {
    if (this.#tail === this.#codes.length) this.#makeRoom();
    const i = this.#tail++;
    const r = i * REFS;
    this.#refs[r] = this.#ref(keyId);
    this.#refs[r + 1] = this.#ref(workspaceId);
    this.#refs[r + 2] = this.#ref(apiId);
    this.#refs[r + 3] = this.#ref(identityId);
    this.#refs[r + 4] = this.#ref(externalId);
    this.#refs[r + 5] = this.#ref(tags);
    const x = i * NUMBERS;
    this.#numbers[x] = time;
    this.#numbers[x + 1] = spentCredits;
    this.#numbers[x + 2] = latency;
    this.#codes[i] = code;
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

  #ref(s: string | null | undefined): number {
    if (s === null || s === undefined) return -1;
    let i = this.#index.get(s);
    if (i === undefined) {
      i = this.#strings.push(s) - 1;
      this.#index.set(s, i);
    }
    return i;
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
    const idFrom = this.#idStart(this.#head);
    const idTo = this.#idStart(this.#tail);
    if (this.#head * 2 < this.#tail) {
      const room = this.#codes.length * 2;
      this.#refs = grown(this.#refs, room * REFS);
      this.#numbers = grown(this.#numbers, room * NUMBERS);
      this.#codes = grown(this.#codes, room);
      this.#idEnds = grown(this.#idEnds, room);
      return;
    }
    this.#refs.copyWithin(0, this.#head * REFS, this.#tail * REFS);
    this.#numbers.copyWithin(0, this.#head * NUMBERS, this.#tail * NUMBERS);
    this.#codes.copyWithin(0, this.#head, this.#tail);
    this.#ids.copyWithin(0, idFrom, idTo);
    for (let i = 0; i < length; i++) this.#idEnds[i] = this.#idEnds[this.#head + i] - idFrom;
    this.#head = 0;
    this.#tail = length;
  }

  /** A new string table holding only the strings of the events held. */
  #reintern(): void {
    const old = this.#strings;
    this.#strings = [];
    this.#index = new Map();
    for (let r = this.#head * REFS; r < this.#tail * REFS; r++) {
      const s = this.#refs[r];
      if (s >= 0) this.#refs[r] = this.#ref(old[s]);
    }
    this.#rebuiltWith = this.#strings.length;
  }

  #clear(): void {
    this.#head = this.#tail = 0;
    this.#strings = [];
    this.#index = new Map();
    this.#rebuiltWith = 0;
  }

  /** Appends the events of a batch that take() returned. */
  #append(p: PackedVerifications): void {
    const { strings, refs, numbers, codes } = p;
    const ids = p.requestIds.split('\n');
    const str = (r: number) => (r < 0 ? undefined : strings[r]);
    for (let i = 0; i < codes.length; i++) {
      const r = i * REFS;
      const x = i * NUMBERS;
      const [keyId, workspaceId, apiId] = [strings[refs[r]], strings[refs[r + 1]], strings[refs[r + 2]]];
      this.#add(
        keyId,
        workspaceId,
        apiId,
        str(refs[r + 3]),
        str(refs[r + 4]),
        str(refs[r + 5]),
        numbers[x],
        numbers[x + 1],
        numbers[x + 2],
        codes[i],
        ids[i],
      );
    }
  }
}

/** `batch` in columns (PackedVerifications). */
export function packVerifications(batch: readonly VerificationEvent[]): PackedVerifications {
  const backlog = new VerificationBacklog();
  for (const e of batch) backlog.push(e);
  return backlog.take(batch.length);
}

/** A copy of `a` with room for `n` elements. */
function grown<A extends Int32Array | Float64Array | Uint8Array | Uint32Array>(a: A, n: number): A {
  const b = new (a.constructor as new (n: number) => A)(n);
  b.set(a);
  return b;
}
