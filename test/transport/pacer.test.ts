import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createPacer } from '../../src/transport/pacer.js';
import { maxInWindow } from '../helpers/fault-server.js';
import { createFakeClock } from './fake-clock.js';

/** Starts `count` acquirers at once and records the clock time each is let go. */
function startAll(pacer: ReturnType<typeof createPacer>, clock: { now(): number }, count: number, times: number[]) {
  return Array.from({ length: count }, () => pacer.acquire().then(() => times.push(clock.now())));
}

async function runUntilIdle(clock: ReturnType<typeof createFakeClock>): Promise<void> {
  while (await clock.next()) {
    // keep firing timers
  }
}

describe('pacer: requests per second, in bursts', () => {
  it('starts at most N in any one-second window, each as soon as the oldest of the last N is a second old', async () => {
    const clock = createFakeClock();
    const pacer = createPacer({ perSecond: 3, clock, marginMs: 0, evenly: false });
    const times: number[] = [];
    const all = startAll(pacer, clock, 8, times);
    await runUntilIdle(clock);
    await Promise.all(all);
    expect(times).toEqual([0, 0, 0, 1000, 1000, 1000, 2000, 2000]);
    expect(maxInWindow(times, 1000)).toBe(3);
    expect(pacer.started).toBe(8);
    expect(clock.pendingTimers).toBe(0);
  });

  it('adds the margin to every window', async () => {
    const clock = createFakeClock();
    const pacer = createPacer({ perSecond: 2, clock, marginMs: 20, evenly: false });
    const times: number[] = [];
    const all = startAll(pacer, clock, 5, times);
    await runUntilIdle(clock);
    await Promise.all(all);
    expect(times).toEqual([0, 0, 1020, 1020, 2040]);
  });

  it('counts a start from when its request actually left, when that was later', async () => {
    const clock = createFakeClock();
    const pacer = createPacer({ perSecond: 2, clock, marginMs: 0, evenly: false });
    const first = await pacer.acquire();
    const second = await pacer.acquire();
    await clock.advance(300);
    pacer.markSent(first); // held back 300 ms by a new connection
    pacer.markSent(second); // ignored: at 300 too, so both count from 300
    pacer.release(first);
    pacer.release(second);
    const times: number[] = [];
    const all = startAll(pacer, clock, 3, times);
    await runUntilIdle(clock);
    await Promise.all(all);
    expect(times).toEqual([1_300, 1_300, 2_300]);
  });

  it('holds the property for any arrival pattern', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 6 }),
        fc.array(fc.integer({ min: 0, max: 400 }), { minLength: 1, maxLength: 40 }),
        async (perSecond, gaps) => {
          const clock = createFakeClock();
          const pacer = createPacer({ perSecond, clock, marginMs: 0, evenly: false });
          const times: number[] = [];
          const arrivals: number[] = [];
          const all: Promise<unknown>[] = [];
          for (const gap of gaps) {
            await clock.advance(gap);
            arrivals.push(clock.now());
            all.push(pacer.acquire().then(() => times.push(clock.now())));
          }
          await runUntilIdle(clock);
          await Promise.all(all);
          expect(maxInWindow(times, 1000)).toBeLessThanOrEqual(perSecond);
          // first come, first served, and never later than the window requires
          const expected: number[] = [];
          arrivals.forEach((arrival, k) => {
            const windowFree = k >= perSecond ? expected[k - perSecond] + 1000 : 0;
            expected.push(Math.max(arrival, windowFree, k > 0 ? expected[k - 1] : 0));
          });
          expect(times).toEqual(expected);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('lets everything go at once with no cap', async () => {
    const clock = createFakeClock();
    const pacer = createPacer({ clock });
    const times: number[] = [];
    await Promise.all(startAll(pacer, clock, 100, times));
    expect(times.every((t) => t === 0)).toBe(true);
  });
});

describe('pacer: requests per second, spread evenly (the default)', () => {
  it('spaces the N starts of a second evenly, margin included', async () => {
    const clock = createFakeClock();
    const pacer = createPacer({ perSecond: 4, clock, marginMs: 20 });
    const times: number[] = [];
    const all = startAll(pacer, clock, 6, times);
    await runUntilIdle(clock);
    await Promise.all(all);
    // (1000 + 20 margin + 10 slack) / 4
    expect(times).toEqual([0, 257.5, 515, 772.5, 1030, 1287.5]);
  });

  it('keeps to its timeline when a timer fires a little late, and allows no burst after a long idle', async () => {
    const clock = createFakeClock();
    const pacer = createPacer({ perSecond: 10, clock, marginMs: 0 });
    await pacer.acquire(); // 0; with 10 ms of slack the next slot is at 101
    await clock.advance(113); // a caller that comes 12 ms after its slot
    await pacer.acquire();
    const times: number[] = [];
    const all = startAll(pacer, clock, 2, times);
    await runUntilIdle(clock);
    await Promise.all(all);
    expect(times).toEqual([202, 303]); // not 214, 315: lateness within 20 ms is caught up
    await clock.advance(10_000);
    const later: number[] = [];
    const more = startAll(pacer, clock, 3, later);
    await runUntilIdle(clock);
    await Promise.all(more);
    const t0 = later[0];
    expect(later.map((t) => t - t0)).toEqual([0, 101, 202]);
  });

  it('holds the window rule and the spacing for any arrival pattern', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 8 }),
        fc.array(fc.integer({ min: 0, max: 300 }), { minLength: 1, maxLength: 40 }),
        async (perSecond, gaps) => {
          const clock = createFakeClock();
          const pacer = createPacer({ perSecond, clock, marginMs: 0 });
          const times: number[] = [];
          const all: Promise<unknown>[] = [];
          for (const gap of gaps) {
            await clock.advance(gap);
            all.push(pacer.acquire().then(() => times.push(clock.now())));
          }
          await runUntilIdle(clock);
          await Promise.all(all);
          expect(times).toHaveLength(gaps.length);
          expect(maxInWindow(times, 1000)).toBeLessThanOrEqual(perSecond);
          // evenly spaced, except that up to 20 ms of lateness may be made up
          const gap = 1010 / perSecond;
          for (let i = 1; i < times.length; i += 1) expect(times[i] - times[i - 1]).toBeGreaterThanOrEqual(Math.max(0, gap - 20) - 1e-9);
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe('pacer: hourly cap', () => {
  it('starts at most H in any hour', async () => {
    const clock = createFakeClock();
    const pacer = createPacer({ perSecond: 100, perHour: 5, clock, marginMs: 0, evenly: false });
    const times: number[] = [];
    const all = startAll(pacer, clock, 7, times);
    await runUntilIdle(clock);
    await Promise.all(all);
    expect(times).toEqual([0, 0, 0, 0, 0, 3_600_000, 3_600_000]);
  });
});

describe('pacer: pause', () => {
  it('holds every start until the pause ends, and never shortens it', async () => {
    const clock = createFakeClock();
    const pacer = createPacer({ perSecond: 100, clock, evenly: false });
    const times: number[] = [];
    await pacer.acquire();
    pacer.pause(2_000);
    pacer.pause(500); // a shorter pause leaves the longer one
    expect(pacer.heldUntil).toBe(2_000);
    const all = startAll(pacer, clock, 3, times);
    await clock.advance(1_999);
    expect(times).toEqual([]);
    await clock.advance(1);
    await Promise.all(all);
    expect(times).toEqual([2_000, 2_000, 2_000]);
    expect(pacer.heldUntil).toBe(0);
  });
});

describe('pacer: server headers', () => {
  it('waits for the reset when nothing remains', async () => {
    const clock = createFakeClock();
    const pacer = createPacer({ clock, marginMs: 10 });
    const ticket = await pacer.acquire();
    pacer.observe({ remaining: 0, resetInMs: 3_000 }, ticket);
    const times: number[] = [];
    const all = startAll(pacer, clock, 2, times);
    await runUntilIdle(clock);
    await Promise.all(all);
    expect(times).toEqual([3_010, 3_010]);
  });

  it('spreads what remains over the time left when it would run out first', async () => {
    const clock = createFakeClock();
    const pacer = createPacer({ perSecond: 100, clock, evenly: false });
    const ticket = await pacer.acquire();
    pacer.observe({ remaining: 4, resetInMs: 2_000 }, ticket);
    const times: number[] = [];
    const all = startAll(pacer, clock, 6, times);
    await runUntilIdle(clock);
    await Promise.all(all);
    // 4 left for 2 s: one every 500 ms; after the reset the per-second cap alone applies
    expect(times.slice(0, 4)).toEqual([500, 1_000, 1_500, 2_000]);
    expect(times.slice(4)).toEqual([2_000, 2_000]);
  });

  it('spaces from the moment it learns, not from a start long ago', async () => {
    const clock = createFakeClock();
    const pacer = createPacer({ clock });
    const ticket = await pacer.acquire();
    await clock.advance(5_000);
    pacer.observe({ remaining: 2, resetInMs: 1_000 }, ticket);
    const times: number[] = [];
    const all = startAll(pacer, clock, 3, times);
    await runUntilIdle(clock);
    await Promise.all(all);
    expect(times).toEqual([5_500, 6_000, 6_000]);
  });

  it('counts starts the answer could not have seen yet', async () => {
    const clock = createFakeClock();
    const pacer = createPacer({ clock, marginMs: 0 });
    const first = await pacer.acquire();
    await pacer.acquire();
    await pacer.acquire();
    // the answer to the first start says 2 remain, but two more have started since
    pacer.observe({ remaining: 2, resetInMs: 1_000 }, first);
    let went = false;
    void pacer.acquire().then(() => (went = true));
    await clock.advance(999);
    expect(went).toBe(false);
    await clock.advance(1);
    expect(went).toBe(true);
  });

  it('does not slow down while plenty remains', async () => {
    const clock = createFakeClock();
    const pacer = createPacer({ perSecond: 10, clock, evenly: false });
    const ticket = await pacer.acquire();
    pacer.observe({ remaining: 2_900, resetInMs: 3_000 }, ticket);
    const times: number[] = [];
    await Promise.all(startAll(pacer, clock, 9, times));
    expect(times.every((t) => t === 0)).toBe(true);
  });

  it('ignores an answer older than one already observed', async () => {
    const clock = createFakeClock();
    const pacer = createPacer({ clock });
    const a = await pacer.acquire();
    const b = await pacer.acquire();
    pacer.observe({ remaining: 100, resetInMs: 1_000 }, b);
    pacer.observe({ remaining: 0, resetInMs: 60_000 }, a);
    expect(pacer.heldUntil).toBe(0);
  });

  it('ignores headers it cannot use', async () => {
    const clock = createFakeClock();
    const pacer = createPacer({ clock });
    const t = await pacer.acquire();
    pacer.observe({ remaining: 0 }, t);
    pacer.observe({ limit: 5 }, t);
    expect(pacer.heldUntil).toBe(0);
  });
});

describe('pacer: abort', () => {
  it('drops a waiter whose signal fires, and keeps order for the rest', async () => {
    const clock = createFakeClock();
    const pacer = createPacer({ perSecond: 1, clock, marginMs: 0, evenly: false });
    await pacer.acquire();
    const controller = new AbortController();
    const order: string[] = [];
    const dropped = pacer.acquire(controller.signal).then(
      () => order.push('dropped went'),
      () => order.push('dropped refused'),
    );
    const kept = pacer.acquire().then(() => order.push(`kept at ${clock.now()}`));
    controller.abort(new Error('stop'));
    await dropped;
    await clock.advance(1_000);
    await kept;
    expect(order).toEqual(['dropped refused', 'kept at 1000']);
    expect(clock.pendingTimers).toBe(0);
  });

  it('refuses at once when the signal has already fired', async () => {
    const pacer = createPacer({ clock: createFakeClock() });
    await expect(pacer.acquire(AbortSignal.abort(new Error('gone')))).rejects.toThrow('gone');
  });

  it('refuses caps that are not whole numbers', () => {
    expect(() => createPacer({ perSecond: 0 })).toThrow(RangeError);
    expect(() => createPacer({ perHour: 2.5 })).toThrow(RangeError);
  });
});
