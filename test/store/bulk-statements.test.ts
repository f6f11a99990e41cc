import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fixedShapeChunks } from '../../src/store/bulk-statements.ts';

describe('fixedShapeChunks', () => {
  test('chunks of max, then the rest in powers of two: every element once, in order, in few shapes', () => {
    const sizes = (n: number) => fixedShapeChunks([...Array(n).keys()], 500).map((c) => c.length);
    assert.deepEqual(sizes(0), []);
    assert.deepEqual(sizes(1), [1]);
    assert.deepEqual(sizes(300), [256, 32, 8, 4]);
    assert.deepEqual(sizes(1_300), [500, 500, 256, 32, 8, 4]);
    assert.deepEqual(sizes(511), [500, 8, 2, 1]);
    const shapes = new Set<number>();
    for (let n = 0; n <= 2_000; n++) {
      const xs = [...Array(n).keys()];
      const chunks = fixedShapeChunks(xs, 500);
      assert.deepEqual(chunks.flat(), xs, `n=${n}`);
      for (const c of chunks) shapes.add(c.length);
    }
    assert.deepEqual(
      [...shapes].sort((a, b) => a - b),
      [1, 2, 4, 8, 16, 32, 64, 128, 256, 500],
    );
  });
});
