// A set of whole numbers held as sorted, disjoint, non-adjacent ranges: acknowledged line numbers
// of one file arrive out of order but mostly in runs, so millions of lines take a few ranges.
import { firstAtLeast } from '../transport/sorted.js';

export interface RangeSet {
  /** Adds every number from start to end, inclusive. */
  add(start: number, end?: number): void;
  has(n: number): boolean;
  /** The ranges in order, as [start, end] pairs. */
  ranges(): Array<[number, number]>;
  /** How many numbers are in the set. */
  readonly size: number;
  readonly rangeCount: number;
}

export function createRangeSet(): RangeSet {
  const starts: number[] = [];
  const ends: number[] = [];
  let size = 0;

  /** The first index whose range ends at or after n. */
  const firstEndingFrom = (n: number): number => firstAtLeast(ends, n);

  return {
    add(start, end = start) {
      if (end < start) return;
      const last = ends.length - 1;
      if (last < 0 || start > ends[last] + 1) {
        starts.push(start);
        ends.push(end);
        size += end - start + 1;
        return;
      }
      // ranges that overlap or touch [start, end] merge into one
      const i = firstEndingFrom(start - 1);
      let j = i;
      let a = start;
      let b = end;
      let removed = 0;
      while (j < starts.length && starts[j] <= end + 1) {
        a = Math.min(a, starts[j]);
        b = Math.max(b, ends[j]);
        removed += ends[j] - starts[j] + 1;
        j += 1;
      }
      size += b - a + 1 - removed;
      if (j === i) {
        starts.splice(i, 0, a);
        ends.splice(i, 0, b);
      } else {
        // one range takes the merged span in place; those after it inside the span go
        starts[i] = a;
        ends[i] = b;
        if (j - i > 1) {
          starts.splice(i + 1, j - i - 1);
          ends.splice(i + 1, j - i - 1);
        }
      }
    },
    has(n) {
      const i = firstEndingFrom(n);
      return i < starts.length && starts[i] <= n;
    },
    ranges() {
      return starts.map((s, i) => [s, ends[i]]);
    },
    get size() {
      return size;
    },
    get rangeCount() {
      return starts.length;
    },
  };
}

/** The numbers in `a` and not in `b`. */
export function difference(a: RangeSet, b: RangeSet): RangeSet {
  const out = createRangeSet();
  if (b.size === 0) {
    for (const [start, end] of a.ranges()) out.add(start, end);
    return out;
  }
  const cut = b.ranges();
  let j = 0;
  for (const [start, end] of a.ranges()) {
    let from = start;
    while (j < cut.length && cut[j][1] < from) j += 1;
    let k = j;
    while (from <= end && k < cut.length && cut[k][0] <= end) {
      if (cut[k][0] > from) out.add(from, cut[k][0] - 1);
      from = Math.max(from, cut[k][1] + 1);
      k += 1;
    }
    if (from <= end) out.add(from, end);
  }
  return out;
}
