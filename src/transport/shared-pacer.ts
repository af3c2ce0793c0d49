// A pacer whose --rate and --hourly are shared with other processes through a RateStore: the local
// pacer still spaces starts, holds them through a 429 and slows down on the server's headers, and
// each start it allows also waits for room in the shared budget. If the store fails mid-run, the run
// goes on at its own share of the limits (rate/N, hourly/N), counting the starts it made already,
// and says so once.
import { abortReason, sleep, systemClock, unlessAborted, type Clock } from './clock.js';
import type { Pacer } from './pacer.js';
import type { RateStore } from './rate-store.js';
import { createStartWindow, type StartWindow } from './start-window.js';

/** The longest a start waits before asking the store again. */
const POLL_MS = 20;

export interface SharedPacerOptions {
  /** Paces this process's starts (pauses, the server's headers, even spacing). */
  local: Pacer;
  store: RateStore;
  /** This process's own share, used once the store has failed: below one (a share of 3 a second among 4), one start every so long. */
  fallback: { perSecond?: number; perHour?: number; marginMs: number };
  /** Told once, when the store fails and the run falls back to its share. */
  onFallback?: (error: Error) => void;
  /** A prefix that makes this process's start ids unique in the store. */
  id: string;
  clock?: Clock;
}

/** A window of `limit` starts in `spanMs`; for a limit below one, of one start in spanMs / limit. */
const windowOf = (limit: number, spanMs: number, marginMs: number): StartWindow =>
  limit >= 1 ? createStartWindow(Math.floor(limit), spanMs + marginMs) : createStartWindow(1, Math.ceil(spanMs / limit) + marginMs);

export function createSharedPacer(options: SharedPacerOptions): Pacer {
  const { local, store, id } = options;
  const clock = options.clock ?? systemClock;
  const { perSecond, perHour, marginMs } = options.fallback;
  // every start is counted here too, so a fallback starts from what this process already sent
  const windows: StartWindow[] = [];
  if (perSecond !== undefined) windows.push(windowOf(perSecond, 1_000, marginMs));
  if (perHour !== undefined) windows.push(windowOf(perHour, 3_600_000, marginMs));
  let failed: Error | undefined;
  /** When each ticket's start was counted, until it is sent. */
  const takenAt = new Map<number, number>();

  const fallBack = (error: unknown): void => {
    if (failed !== undefined) return;
    failed = error instanceof Error ? error : new Error(String(error));
    options.onFallback?.(failed);
  };
  /** Counts a start in this process's windows, now: in the step that allowed it, so that no other start is allowed in between. */
  const counted = (): number => {
    const now = clock.now();
    for (const w of windows) w.add(now);
    return now;
  };
  /**
   * The takes the store told to wait go one after another: only the first asks again (every 20 ms),
   * the others wait their turn. Each request in flight asking on its own asked 15 times as often
   * (4 processes of 16 requests waiting out an hourly cap: 2,900 asks a second).
   */
  let waiters: Promise<void> = Promise.resolve();
  /** Takes in that line. */
  let waiting = 0;

  /** What the store answers a take (ms to wait; 0: counted), or undefined once it failed (the run then goes on at its share). */
  async function ask(ticket: number, signal?: AbortSignal): Promise<number | undefined> {
    if (failed !== undefined) return undefined;
    try {
      return await unlessAborted(store.take(`${id}:${ticket}`), signal);
    } catch (error) {
      // a run stopping (SIGTERM) does not wait for a store that is slow to answer, nor say it failed
      if (signal?.aborted) throw abortReason(signal);
      fallBack(error);
      return undefined;
    }
  }

  /** Takes a place in the shared budget (at once when it has room), or in this process's share once the store failed; when it was counted here. */
  async function takeShared(ticket: number, signal?: AbortSignal): Promise<number> {
    let waitMs = await ask(ticket, signal);
    if (waitMs === undefined) return takeOwnShare(signal);
    if (waitMs <= 0) return counted();
    let done!: () => void;
    const mine = new Promise<void>((resolve) => (done = resolve));
    const before = waiters;
    waiters = before.then(() => mine);
    const ahead = waiting;
    waiting += 1;
    try {
      await unlessAborted(before, signal);
      // one that waited behind others asks at once: the wait it was told is as old as its turn
      if (ahead > 0) waitMs = 0;
      for (;;) {
        // a place may open sooner than the store can say: the start it waits for may be one counted
        // ahead whose request has left since (its move is on the way)
        if (waitMs > 0) await sleep(clock, Math.min(waitMs, POLL_MS), signal);
        waitMs = await ask(ticket, signal);
        if (waitMs === undefined) return await takeOwnShare(signal);
        if (waitMs <= 0) return counted();
      }
    } finally {
      waiting -= 1;
      done();
    }
  }

  async function takeOwnShare(signal?: AbortSignal): Promise<number> {
    for (;;) {
      if (signal?.aborted) throw abortReason(signal);
      const at = Math.max(...windows.map((w) => w.readyAt()), Number.NEGATIVE_INFINITY);
      const now = clock.now();
      // checked and counted in one step: the requests that were waiting on the store when it failed come one by one
      if (at <= now) return counted();
      await sleep(clock, at - now, signal);
    }
  }

  return {
    async acquire(signal) {
      const ticket = await local.acquire(signal);
      // each request in flight takes its place at once, the store counting each take whole: one at a
      // time, a store 50 ms away held a run to one start in a round trip (10 a second)
      let at: number;
      try {
        at = await takeShared(ticket, signal);
      } catch (error) {
        local.release(ticket);
        throw error;
      }
      takenAt.set(ticket, at);
      return ticket;
    },
    markSent(ticket) {
      local.markSent(ticket);
      const at = takenAt.get(ticket);
      if (at === undefined) return;
      takenAt.delete(ticket);
      const now = clock.now();
      // the store counted the start a little ahead: from now on it counts when the request left
      if (failed === undefined) store.move(`${id}:${ticket}`).catch(fallBack);
      if (now > at) for (const w of windows) w.move(at, now);
    },
    release(ticket) {
      takenAt.delete(ticket);
      local.release(ticket);
    },
    pause: (untilMs) => local.pause(untilMs),
    observe: (info, ticket) => local.observe(info, ticket),
    get heldUntil() {
      return local.heldUntil;
    },
    get started() {
      return local.started;
    },
  };
}
