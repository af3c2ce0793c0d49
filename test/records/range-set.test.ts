import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createRangeSet } from '../../src/records/range-set.js';

describe('range set', () => {
  it('merges overlapping and touching ranges', () => {
    const set = createRangeSet();
    set.add(10, 12);
    set.add(1, 3);
    set.add(5);
    set.add(4);
    expect(set.ranges()).toEqual([
      [1, 5],
      [10, 12],
    ]);
    set.add(6, 9);
    expect(set.ranges()).toEqual([[1, 12]]);
    expect(set.size).toBe(12);
    set.add(3, 11);
    expect(set.size).toBe(12);
  });

  it('answers membership', () => {
    const set = createRangeSet();
    set.add(2, 4);
    set.add(8, 8);
    expect([1, 2, 4, 5, 7, 8, 9].map((n) => set.has(n))).toEqual([false, true, true, false, false, true, false]);
  });

  it('keeps a million out-of-order acknowledgements as one range', () => {
    const set = createRangeSet();
    // requests settle out of order within a window of 64
    for (let base = 0; base < 1_000_000; base += 64 * 50) {
      const order = Array.from({ length: 64 }, (_, i) => i).sort(() => Math.random() - 0.5);
      for (const r of order) {
        const first = base + r * 50 + 2;
        for (let line = first; line < first + 50; line += 1) set.add(line);
      }
    }
    expect(set.rangeCount).toBe(1);
    expect(set.size).toBe(Math.ceil(1_000_000 / (64 * 50)) * 64 * 50);
    expect(set.ranges()).toEqual([[2, set.size + 1]]);
  });

  it('agrees with a plain set', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 1, max: 200 }), fc.integer({ min: 0, max: 6 }))), (adds) => {
        const set = createRangeSet();
        const plain = new Set<number>();
        for (const [start, len] of adds) {
          set.add(start, start + len);
          for (let n = start; n <= start + len; n += 1) plain.add(n);
        }
        expect(set.size).toBe(plain.size);
        for (let n = 0; n <= 210; n += 1) expect(set.has(n)).toBe(plain.has(n));
        const ranges = set.ranges();
        for (let i = 1; i < ranges.length; i += 1) expect(ranges[i][0]).toBeGreaterThan(ranges[i - 1][1] + 1);
      }),
      { numRuns: 60 },
    );
  });
});
