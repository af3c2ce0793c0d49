import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createStartWindow } from '../../src/transport/start-window.js';

/** The rule the window keeps, from every start counted: the Nth latest start plus the span. */
function readyAtFromAll(starts: readonly number[], capacity: number, spanMs: number): number {
  if (starts.length < capacity) return Number.NEGATIVE_INFINITY;
  return [...starts].sort((a, b) => b - a)[capacity - 1] + spanMs;
}

describe('start window', () => {
  it('holds the last window of starts, not every start, when N is far above the rate', () => {
    const window = createStartWindow(1_000_000, 1_020);
    // 200,000 starts, one every 0.2 ms: 40 s of sending at 5,000 requests a second
    for (let i = 0; i < 200_000; i += 1) window.add(i * 0.2);
    expect(window.size()).toBeLessThanOrEqual(5_101);
    expect(window.size()).toBeGreaterThanOrEqual(5_100);
    expect(window.readyAt()).toBe(Number.NEGATIVE_INFINITY);
  });

  it('counts a start moved after it was let go as a window old where its request left', () => {
    const window = createStartWindow(2, 1_000);
    window.add(0);
    window.add(1_500);
    expect(window.size()).toBe(1);
    // the request allowed at 0 left only at 1,600
    window.move(0, 1_600);
    expect(window.size()).toBe(2);
    expect(window.readyAt()).toBe(2_500);
  });

  it('tells the same earliest next start as the rule applied to every start, for any starts and moves', () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('add' as const), after: fc.integer({ min: 0, max: 700 }) }),
      fc.record({ kind: fc.constant('move' as const), after: fc.integer({ min: 0, max: 700 }), which: fc.nat() }),
    );
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: 1_000 }), fc.array(op, { maxLength: 80 }), (capacity, spanMs, ops) => {
        const window = createStartWindow(capacity, spanMs);
        const starts: number[] = [];
        // starts allowed and not yet moved to when their request left (each moves at most once)
        const unsent: number[] = [];
        let now = 0;
        for (const o of ops) {
          now += o.after;
          if (o.kind === 'add' || unsent.length === 0) {
            window.add(now);
            starts.push(now);
            unsent.push(now);
          } else {
            const [from] = unsent.splice(o.which % unsent.length, 1);
            window.move(from, now);
            starts[starts.indexOf(from)] = now;
          }
          // a time already past means "now" either way
          expect(Math.max(window.readyAt(), now)).toBe(Math.max(readyAtFromAll(starts, capacity, spanMs), now));
          expect(window.size()).toBeLessThanOrEqual(capacity);
        }
      }),
      { numRuns: 500 },
    );
  });
});
