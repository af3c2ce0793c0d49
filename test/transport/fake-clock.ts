// A clock that moves only when a test says so, for pacing and backoff without real waiting.
import type { Clock } from '../../src/transport/clock.js';

export interface FakeClock extends Clock {
  /** Moves time forward, firing due timers in order and letting promises settle after each. */
  advance(ms: number): Promise<void>;
  /** Moves to the next due timer, if any, and fires it. */
  next(): Promise<boolean>;
  readonly pendingTimers: number;
}

/** Lets every queued promise reaction run. */
export const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export function createFakeClock(start = 0, wallStart = Date.UTC(2026, 0, 1)): FakeClock {
  let now = start;
  let nextId = 0;
  const timers = new Map<number, { at: number; fn: () => void; id: number }>();

  const due = (limit: number) => {
    let first: { at: number; fn: () => void; id: number } | undefined;
    for (const t of timers.values()) {
      if (t.at <= limit && (first === undefined || t.at < first.at || (t.at === first.at && t.id < first.id))) first = t;
    }
    return first;
  };

  const clock: FakeClock = {
    now: () => now,
    wallNow: () => wallStart + now,
    setTimer(fn, ms) {
      const id = nextId++;
      timers.set(id, { at: now + Math.max(0, ms), fn, id });
      return () => {
        timers.delete(id);
      };
    },
    async advance(ms) {
      const target = now + ms;
      await settle();
      for (;;) {
        const t = due(target);
        if (t === undefined) break;
        timers.delete(t.id);
        now = t.at;
        t.fn();
        await settle();
      }
      now = target;
      await settle();
    },
    async next() {
      await settle();
      const t = due(Number.POSITIVE_INFINITY);
      if (t === undefined) return false;
      timers.delete(t.id);
      now = Math.max(now, t.at);
      t.fn();
      await settle();
      return true;
    },
    get pendingTimers() {
      return timers.size;
    },
  };
  return clock;
}
