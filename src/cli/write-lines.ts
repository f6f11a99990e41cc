import { once } from 'node:events';
import type { Writable } from 'node:stream';

/** Lines are gathered into writes of about this many characters: one write per line would cost more than the lines. */
const WRITE_CHARS = 64 * 1024;

/**
 * Writes each line of `lines` to `out`, newline-terminated, waiting for 'drain' whenever `out` says its
 * buffer is full, so that a slow reader (a pipe to a slow consumer) pauses the producer instead of filling
 * memory. Rejects when `out` fails (e.g. EPIPE: the reader went away), and the producer is then not resumed.
 */
export async function writeLines(lines: AsyncIterable<string>, out: Writable): Promise<void> {
  let failure: Error | undefined;
  const onError = (e: Error) => {
    failure = e;
  };
  out.on('error', onError);
  try {
    let chunk = '';
    const flush = async () => {
      if (failure) throw failure;
      const more = out.write(chunk);
      chunk = '';
      if (!more) await once(out, 'drain');
    };
    for await (const line of lines) {
      chunk += `${line}\n`;
      if (chunk.length >= WRITE_CHARS) await flush();
    }
    if (chunk) await flush();
    if (failure) throw failure;
  } finally {
    out.off('error', onError);
  }
}
