// Binary search over an ascending array of numbers.

/** The first index from `lo` on whose value is at least n (values.length when there is none). */
export function firstAtLeast(values: readonly number[], n: number, lo = 0): number {
  let hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (values[mid] < n) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
