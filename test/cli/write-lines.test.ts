import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { writeLines } from '../../src/cli/write-lines.ts';

/** Pages of `size` lines of `width` characters, counting how many have been produced. */
function producer(pages: number, size: number, width: number) {
  const state = { produced: 0 };
  async function* generate(): AsyncGenerator<string[]> {
    for (let p = 0; p < pages; p++) {
      state.produced++;
      yield Array.from({ length: size }, (_, i) => `${p}:${i}:`.padEnd(width, 'x'));
    }
  }
  return { state, pages: generate() };
}

describe('writeLines (what a streaming command writes)', () => {
  test('a slow reader holds the producer back: it runs at most a few pages ahead of what was written', async () => {
    const { state, pages } = producer(200, 100, 99); // 100 lines of 100 characters: 10,000 characters a page
    let written = 0;
    let maxAhead = 0;
    const slow = new Writable({
      highWaterMark: 16 * 1024,
      write(chunk: Buffer, _encoding, done) {
        written += chunk.length;
        maxAhead = Math.max(maxAhead, state.produced * 10_000 - written);
        setTimeout(done, 2);
      },
    });
    await writeLines(pages, slow);
    assert.equal(written, 200 * 10_000);
    assert.ok(maxAhead <= 6 * 10_000, `the producer ran ${maxAhead} characters ahead of the reader`);
  });

  test('the collector is asked once per 16 MiB written, never for less', async () => {
    const { pages } = producer(400, 100, 999); // 100 lines of 1,000 characters: 100,000 characters a page
    let written = 0;
    const writtenAtCollect: number[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        written += chunk.length;
        done();
      },
    });
    await writeLines(pages, sink, () => writtenAtCollect.push(written));
    assert.equal(written, 40_000_000);
    const step = 16 * 1024 * 1024;
    assert.equal(writtenAtCollect.length, Math.floor(written / step));
    for (const [i, at] of writtenAtCollect.entries())
      assert.ok(at >= (i + 1) * step && at < (i + 1) * step + 32 * 1024, `collection ${i + 1} at ${at}`);
  });

  test('every line once, in order, newline-terminated', async () => {
    const { pages } = producer(30, 7, 20);
    let text = '';
    const sink = new Writable({
      write(chunk, _encoding, done) {
        text += String(chunk);
        done();
      },
    });
    await writeLines(pages, sink);
    const expected = Array.from({ length: 30 }, (_, p) => Array.from({ length: 7 }, (_, i) => `${p}:${i}:`.padEnd(20, 'x'))).flat();
    assert.deepEqual(text.split('\n'), [...expected, '']);
  });

  test('a reader that goes away (EPIPE) rejects, and the producer is not resumed', async () => {
    const { state, pages } = producer(1000, 100, 99);
    const broken = new Writable({
      highWaterMark: 1024,
      write(_chunk, _encoding, done) {
        done(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
      },
    });
    await assert.rejects(writeLines(pages, broken), /EPIPE/);
    assert.ok(state.produced < 10, `produced ${state.produced} pages after the reader failed`);
  });
});
