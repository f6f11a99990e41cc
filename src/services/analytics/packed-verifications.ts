import { VERIFY_CODES } from '../../domain/verify-codes.ts';
import type { VerificationEvent } from '../verification/verification-recorder.ts';

/**
 * A batch of verification events as sent to the analytics writer thread: columns instead of objects. Posting the
 * events themselves had the thread that answers verifications serialize every object and every string of every
 * event (about 2 µs of its CPU per verification, measured); here the strings a batch repeats (a key's ids, its
 * identity, a tag set) are sent once, numbers go in typed arrays (copied as bytes: not handed over, since a batch
 * whose write fails goes back into the queue), and the request ids as one string (an array of them cost the sender
 * about 0.3 µs per event to serialize).
 */
export interface PackedVerifications {
  /** The distinct strings of the batch; `refs` index into it. */
  strings: string[];
  /** Per event: key, workspace, API, identity, external id, tags (JSON) as indexes into `strings`; -1 for none. */
  refs: Int32Array;
  /** Per event: time, spent credits, latency. */
  numbers: Float64Array;
  /** Per event: the outcome's index in VERIFY_CODES. */
  codes: Uint8Array;
  /** Per event, each followed by a newline: its request id (Keyhold's own, `req_…`), or nothing for none. */
  requestIds: string;
}

export const REFS = 6;
export const NUMBERS = 3;
export const CODE_INDEX = new Map<string, number>(VERIFY_CODES.map((c, i) => [c, i]));

/** The events of a packed batch, as the recorder writes them. */
export function unpackVerifications(packed: PackedVerifications): VerificationEvent[] {
  const { strings, refs, numbers, codes } = packed;
  const requestIds = packed.requestIds.split('\n');
  const tagSets = new Map<number, string[]>();
  const tagsOf = (i: number): string[] | undefined => {
    if (i < 0) return undefined;
    let tags = tagSets.get(i);
    if (!tags) {
      tags = JSON.parse(strings[i]) as string[];
      tagSets.set(i, tags);
    }
    return tags;
  };
  const events = new Array<VerificationEvent>(codes.length);
  for (let i = 0; i < codes.length; i++) {
    const r = i * REFS;
    const n = i * NUMBERS;
    events[i] = {
      keyId: strings[refs[r]],
      workspaceId: strings[refs[r + 1]],
      apiId: strings[refs[r + 2]],
      identityId: refs[r + 3] < 0 ? null : strings[refs[r + 3]],
      externalId: refs[r + 4] < 0 ? null : strings[refs[r + 4]],
      tags: tagsOf(refs[r + 5]),
      code: VERIFY_CODES[codes[i]],
      time: numbers[n],
      spentCredits: numbers[n + 1],
      latency: numbers[n + 2],
      requestId: requestIds[i] === '' ? undefined : requestIds[i],
    };
  }
  return events;
}
