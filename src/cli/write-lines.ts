import { once } from 'node:events';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import type { Writable } from 'node:stream';
import { runInNewContext } from 'node:vm';

/**
 * Lines are gathered into writes of about this many characters: one write per line would cost more than the
 * lines, and a larger chunk is one more object alive at every young-generation collection (see below).
 */
const WRITE_CHARS = 16 * 1024;

/** Characters written between two old-generation collections of a stream (see tuneGcForStreaming). */
const COLLECT_CHARS = 16 * 1024 * 1024;

/**
 * Writes each line of `pages` to `out`, newline-terminated, waiting for 'drain' whenever `out` says its
 * buffer is full, so that a slow reader (a pipe to a slow consumer) pauses the producer instead of filling
 * memory. Rejects when `out` fails (e.g. EPIPE: the reader went away), and the producer is then not resumed.
 */
export async function writeLines(pages: AsyncIterable<string[]>, out: Writable, collect?: () => void): Promise<void> {
  let failure: Error | undefined;
  let uncollected = 0;
  const onError = (e: Error) => {
    failure = e;
  };
  out.on('error', onError);
  try {
    let chunk = '';
    const flush = async () => {
      if (failure) throw failure;
      const more = out.write(chunk);
      uncollected += chunk.length;
      chunk = '';
      if (collect && uncollected >= COLLECT_CHARS) {
        uncollected = 0;
        collect();
      }
      if (!more) await once(out, 'drain');
      // Yield to the event loop: stdout to a file or pipe is written synchronously and SQLite answers
      // synchronously, so without this a whole export would run in one turn, with no timer, signal handler
      // or V8 garbage-collection task (incremental marking finishes in a task) in between.
      else await nextTurn();
    };
    for await (const lines of pages) {
      for (const line of lines) {
        chunk += `${line}\n`;
        if (chunk.length >= WRITE_CHARS) await flush();
      }
    }
    if (chunk) await flush();
    if (failure) throw failure;
  } finally {
    out.off('error', onError);
  }
}

/**
 * Called before a streaming command opens the store (its start would already grow V8's young generation);
 * answers the function writeLines calls every COLLECT_CHARS written.
 *
 * A stream allocates at a high rate for as long as it runs, and V8 answers by doubling its young generation
 * up to 2 × 64 MB on a machine with much memory: most of the RSS growth of a long export. Growing it by a
 * factor of 1 keeps it at its starting size; V8 reads this flag whenever the young generation would grow,
 * so setting it now takes effect. Collections are more frequent and as cheap (few objects outlive a page).
 * Measured exporting 1,000,000 audit records (bench/export-audit.ts): peak RSS 166..206 MB without, 136..140 MB with.
 *
 * What is left is the old generation: a small share of each page survives two young collections and is
 * promoted, and V8 lets the old generation grow by tens of megabytes before its first full collection
 * (measured with --trace-gc: 23 → 73 MB over 1,000,000 records, no full collection in between). A batch
 * command knows better than V8's heuristics that all of it is garbage, so it asks for a full collection,
 * run concurrently (`async`), every 16 MiB written: the old generation then stays within a few megabytes.
 * `gc` exists only with --expose-gc, which V8 honours for contexts made after it is set: one is made for it.
 */
export function tuneGcForStreaming(): () => void {
  setFlagsFromString('--semi-space-growth-factor=1');
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as (options: { type: 'major'; execution: 'async' }) => void;
  return () => gc({ type: 'major', execution: 'async' });
}
