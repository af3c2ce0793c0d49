// Decides when each request may start: at most N starts in any one-second window (and H in any
// hour), spread evenly over the second, all sending held during a 429 pause, and slower when the
// server's headers say the remaining allowance would run out before its window resets.
import { systemClock, abortReason, type Clock } from './clock.js';
import type { RateLimitInfo } from './rate-limit-headers.js';
import { createStartWindow } from './start-window.js';

export interface PacerOptions {
  /** Most requests that may start in any 1 s window; undefined for no cap. */
  perSecond?: number;
  /** Most requests that may start in any hour; undefined for no cap. */
  perHour?: number;
  clock?: Clock;
  /**
   * Added to every window, so that a server which sees a request a little later than it was
   * started still never counts more than N in its own one-second window.
   */
  marginMs?: number;
  /**
   * Spread the N starts of a second evenly (default) rather than let them go in one burst. The
   * window rule holds either way; spreading keeps a server's count right even when the requests
   * of a burst reach it unevenly late, and suits servers that refill a token bucket.
   */
  evenly?: boolean;
  /**
   * Told when requests wait more than LONG_WAIT_MS for their start, and why: once per wait (a new
   * end or reason is a new wait).
   */
  onLongWait?: (wait: { untilMs: number; reason: WaitReason }) => void;
}

/** What holds a start back: the --hourly cap, a 429's pause, the server's rate-limit headers, the --rate cap. */
export type WaitReason = 'hourly' | 'retry-after' | 'server-window' | 'rate';

/** Waits longer than this are told (onLongWait). */
export const LONG_WAIT_MS = 5_000;

export interface Pacer {
  /** Resolves with a ticket (the start's sequence number) when a request may start. */
  acquire(signal?: AbortSignal): Promise<number>;
  /** Holds every start until the clock reaches untilMs (a 429); never shortens a pause. */
  pause(untilMs: number): void;
  /**
   * The request of this ticket has just left: its start counts from now rather than from when it
   * was allowed (a new connection may have held it back). Call at most once per ticket.
   */
  markSent(ticket: number): void;
  /** The request of this ticket has its answer (or never left); forgets its allowed time. */
  release(ticket: number): void;
  /** Takes the rate-limit headers of the answer to the request that started with this ticket. */
  observe(info: RateLimitInfo, ticket: number): void;
  /** Clock time before which nothing starts (pause or header hold), or 0. */
  readonly heldUntil: number;
  readonly started: number;
}

export const DEFAULT_WINDOW_MARGIN_MS = 20;
/** Lateness of a timer that even spacing forgives (catches up on) instead of carrying forward. */
export const CATCH_UP_MS = 20;
/**
 * Even spacing plans N starts per 1 s + margin + this, a little wider than the window itself, so
 * that a request leaving a few ms after its turn does not make the window hold the next one back
 * (which would slow every later start by as much).
 */
export const SPACING_SLACK_MS = 10;
const SECOND_MS = 1_000;
const HOUR_MS = 3_600_000;

function checkCap(name: string, value: number | undefined): number | undefined {
  if (value === undefined || value === Number.POSITIVE_INFINITY) return undefined;
  if (!Number.isInteger(value) || value < 1) throw new RangeError(`${name} must be a whole number of at least 1`);
  return value;
}

interface Waiter {
  resolve(ticket: number): void;
  reject(error: Error): void;
  signal?: AbortSignal;
  onAbort?: () => void;
}

export function createPacer(options: PacerOptions = {}): Pacer {
  const clock = options.clock ?? systemClock;
  const margin = options.marginMs ?? DEFAULT_WINDOW_MARGIN_MS;
  const perSecond = checkCap('perSecond', options.perSecond);
  const perHour = checkCap('perHour', options.perHour);
  const second = perSecond === undefined ? undefined : createStartWindow(perSecond, SECOND_MS + margin);
  const hour = perHour === undefined ? undefined : createStartWindow(perHour, HOUR_MS + margin);
  const nominalGapMs = perSecond === undefined ? 0 : SECOND_MS / perSecond;
  const evenGapMs = perSecond === undefined || options.evenly === false ? 0 : (SECOND_MS + margin + SPACING_SLACK_MS) / perSecond;

  const queue: Waiter[] = [];
  /** When each ticket not yet sent was allowed to start. */
  const allowedAt = new Map<number, number>();
  let issued = 0;
  let pausedUntil = 0;
  let holdUntil = 0;
  let gapMs = 0;
  let gapUntil = 0;
  /** When the spacing was decided: the first spaced start comes a gap after it, not after an old start. */
  let gapFrom = 0;
  let lastStart = Number.NEGATIVE_INFINITY;
  /** With even spacing, the planned time of the next start (kept on its timeline, so late timers do not slow the rate). */
  let nextSlot = Number.NEGATIVE_INFINITY;
  let newestObserved = -1;
  let cancelTimer: (() => void) | undefined;
  let timerAt = Number.NaN;

  function nextStartAt(now: number): number {
    let t = Math.max(pausedUntil, holdUntil, nextSlot);
    if (second !== undefined) t = Math.max(t, second.readyAt());
    if (hour !== undefined) t = Math.max(t, hour.readyAt());
    if (gapMs > 0 && now < gapUntil) t = Math.max(t, Math.min(Math.max(lastStart, gapFrom) + gapMs, gapUntil));
    return t;
  }

  function disarm(): void {
    cancelTimer?.();
    cancelTimer = undefined;
    timerAt = Number.NaN;
  }

  let told = { until: Number.NaN };
  function tellLongWait(at: number, now: number): void {
    if (options.onLongWait === undefined || at - now <= LONG_WAIT_MS) return;
    const reason: WaitReason =
      hour !== undefined && hour.readyAt() === at ? 'hourly' : pausedUntil === at ? 'retry-after' : holdUntil === at ? 'server-window' : 'rate';
    // the same wait, re-armed by each request that joins it a few ms later, or held for a second reason: told once
    if (Math.abs(at - told.until) < 1_000) return;
    told = { until: at };
    options.onLongWait({ untilMs: at, reason });
  }

  function arm(at: number, now: number): void {
    tellLongWait(at, now);
    if (cancelTimer !== undefined && timerAt === at) return;
    disarm();
    timerAt = at;
    cancelTimer = clock.setTimer(() => {
      cancelTimer = undefined;
      timerAt = Number.NaN;
      pump();
    }, at - now);
  }

  function pump(): void {
    const now = clock.now();
    while (queue.length > 0) {
      const at = nextStartAt(now);
      if (at > now) {
        arm(at, now);
        return;
      }
      const waiter = queue.shift() as Waiter;
      if (waiter.onAbort !== undefined) waiter.signal?.removeEventListener('abort', waiter.onAbort);
      waiter.resolve(start(now));
    }
    disarm();
  }

  /** Counts a start now and returns its ticket. */
  function start(now: number): number {
    second?.add(now);
    hour?.add(now);
    lastStart = now;
    // a start a little after its slot keeps the timeline; after an idle spell it starts afresh
    if (evenGapMs > 0) nextSlot = (nextSlot >= now - CATCH_UP_MS ? nextSlot : now) + evenGapMs;
    if (second !== undefined || hour !== undefined) allowedAt.set(issued, now);
    issued += 1;
    return issued - 1;
  }

  return {
    acquire(signal) {
      if (signal?.aborted) return Promise.reject(abortReason(signal));
      if (queue.length === 0) {
        // the common case: nobody waiting and a start allowed now
        const now = clock.now();
        if (nextStartAt(now) <= now) return Promise.resolve(start(now));
      }
      return new Promise<number>((resolve, reject) => {
        const waiter: Waiter = { resolve, reject, signal };
        if (signal !== undefined) {
          waiter.onAbort = () => {
            const at = queue.indexOf(waiter);
            if (at >= 0) queue.splice(at, 1);
            reject(abortReason(signal));
            pump();
          };
          signal.addEventListener('abort', waiter.onAbort, { once: true });
        }
        queue.push(waiter);
        pump();
      });
    },

    pause(untilMs) {
      if (untilMs <= pausedUntil) return;
      pausedUntil = untilMs;
      pump();
    },

    markSent(ticket) {
      const at = allowedAt.get(ticket);
      if (at === undefined) return;
      allowedAt.delete(ticket);
      const now = clock.now();
      if (now <= at) return;
      // a later start can only push the next one later; a timer already set re-checks when it fires
      second?.move(at, now);
      hour?.move(at, now);
    },

    release(ticket) {
      allowedAt.delete(ticket);
    },

    observe(info, ticket) {
      if (info.remaining === undefined || info.resetInMs === undefined) return;
      // an answer to an earlier start knows less than one already taken into account
      if (ticket < newestObserved) return;
      newestObserved = ticket;
      // a window longer than an hour is no window this pacer knows of (or a clock far off): ignore it
      if (info.resetInMs > HOUR_MS + 60_000) return;
      const now = clock.now();
      const resetAt = now + info.resetInMs;
      // starts after this one may not be counted in its Remaining yet
      const budget = info.remaining - (issued - ticket - 1);
      if (budget <= 0) {
        holdUntil = Math.max(holdUntil, resetAt + margin);
        gapMs = 0;
      } else {
        const spread = info.resetInMs / budget;
        gapMs = spread > nominalGapMs ? spread : 0;
        gapUntil = resetAt;
        gapFrom = now;
      }
      pump();
    },

    get heldUntil() {
      const held = Math.max(pausedUntil, holdUntil);
      return held > clock.now() ? held : 0;
    },

    get started() {
      return issued;
    },
  };
}
