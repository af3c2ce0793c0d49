// Randomised trials of the pacer against its rule, with what moves starts in a real run: requests that
// leave some time after their turn (markSent), 429s whose Retry-After pauses every start, and up to 16
// requests in flight. The rule: a start is let go only while fewer than N starts fall in the window of
// 1 s + margin before it, each counted when its request left, or when it was let go if it has not left
// yet (a request that leaves later than that can only be counted once it has).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createPacer } from '../../src/transport/pacer.js';
import { maxInWindow } from '../helpers/fault-server.js';
import { createFakeClock } from './fake-clock.js';

interface Step { leaveAfter: number; answerAfter: number; retryAfter: number }

async function trial(perSecond: number, concurrency: number, marginMs: number, evenly: boolean, steps: Step[]) {
  const span = 1_000 + marginMs;
  const clock = createFakeClock();
  const pacer = createPacer({ perSecond, clock, marginMs, evenly });
  const departures: number[] = [];
  /** Each start: when it was let go, and when its request left once it has. */
  const starts: Array<{ allowed: number; left?: number }> = [];
  let mostInWindow = 0;
  /** The latest Retry-After told, and whether a start was let go before it. */
  let pausedUntil = 0;
  let startedInPause = false;
  const waitFor = (ms: number) => new Promise<void>((resolve) => clock.setTimer(resolve, ms));
  let next = 0;
  const sender = async (): Promise<void> => {
    while (next < steps.length) {
      const step = steps[next];
      next += 1;
      const ticket = await pacer.acquire();
      const now = clock.now();
      if (now < pausedUntil) startedInPause = true;
      const inWindow = starts.filter((s) => now - (s.left ?? s.allowed) < span).length;
      mostInWindow = Math.max(mostInWindow, inWindow + 1);
      const mine: { allowed: number; left?: number } = { allowed: now };
      starts.push(mine);
      if (step.leaveAfter > 0) await waitFor(step.leaveAfter);
      departures.push(clock.now());
      mine.left = clock.now();
      pacer.markSent(ticket);
      await waitFor(step.answerAfter);
      if (step.retryAfter > 0) {
        pausedUntil = Math.max(pausedUntil, clock.now() + step.retryAfter);
        pacer.pause(clock.now() + step.retryAfter);
      }
      pacer.release(ticket);
    }
  };
  const all = Promise.all(Array.from({ length: concurrency }, sender));
  let done = false;
  void all.then(() => (done = true));
  while (!done) if (!(await clock.next())) break;
  await all;
  return { departures, mostInWindow, startedInPause };
}

const step = fc.record({
  leaveAfter: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 1_500 })),
  answerAfter: fc.integer({ min: 0, max: 800 }),
  retryAfter: fc.oneof({ weight: 6, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 3_000 }) }),
});

describe('pacer: starts moved by slow connections, and Retry-After', () => {
  for (const perSecond of [2, 50]) {
    it(`starts no more than ${perSecond} in any window, 16 in flight`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 160 }), fc.integer({ min: 0, max: 50 }), fc.boolean(), async (steps, marginMs, evenly) => {
          const { departures, mostInWindow, startedInPause } = await trial(perSecond, 16, marginMs, evenly, steps);
          expect(departures).toHaveLength(steps.length);
          expect(mostInWindow).toBeLessThanOrEqual(perSecond);
          expect(startedInPause).toBe(false);
          // requests that leave on their turn: no window holds more than N departures
          if (steps.every((s) => s.leaveAfter === 0)) expect(maxInWindow(departures, 1_000 + marginMs)).toBeLessThanOrEqual(perSecond);
        }),
        { numRuns: 150 },
      );
    }, 120_000);
  }
});
