// Decides when each request may start: at most N starts in any one-second window (and H in any
// hour), spread evenly over the second, all sending held during a 429 pause, and slower when the
// server's headers say the remaining allowance would run out before its window resets.
import { systemClock, abortReason, type Clock } from './clock.js';
import type { RateLimitInfo } from './rate-limit-headers.js';
import { createStartWindow, type StartWindow } from './start-window.js';

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
  return new StartPacer(options);
}

/** The Pacer: the starts it counted, the waiters in line, and what holds the next start back. */
class StartPacer implements Pacer {
  readonly #options: PacerOptions;
  readonly #clock: Clock;
  readonly #margin: number;
  readonly #second: StartWindow | undefined;
  readonly #hour: StartWindow | undefined;
  readonly #nominalGapMs: number;
  readonly #evenGapMs: number;
  readonly #queue: Waiter[] = [];
  /** When each ticket not yet sent was allowed to start. */
  readonly #allowedAt = new Map<number, number>();
  #issued = 0;
  #pausedUntil = 0;
  #holdUntil = 0;
  #gapMs = 0;
  #gapUntil = 0;
  /** When the spacing was decided: the first spaced start comes a gap after it, not after an old start. */
  #gapFrom = 0;
  #lastStart = Number.NEGATIVE_INFINITY;
  /** With even spacing, the planned time of the next start (kept on its timeline, so late timers do not slow the rate). */
  #nextSlot = Number.NEGATIVE_INFINITY;
  #newestObserved = -1;
  #cancelTimer: (() => void) | undefined;
  #timerAt = Number.NaN;
  /** The end of the last long wait told (onLongWait). */
  #toldUntil = Number.NaN;

  constructor(options: PacerOptions) {
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    this.#margin = options.marginMs ?? DEFAULT_WINDOW_MARGIN_MS;
    const perSecond = checkCap('perSecond', options.perSecond);
    const perHour = checkCap('perHour', options.perHour);
    this.#second = perSecond === undefined ? undefined : createStartWindow(perSecond, SECOND_MS + this.#margin);
    this.#hour = perHour === undefined ? undefined : createStartWindow(perHour, HOUR_MS + this.#margin);
    this.#nominalGapMs = perSecond === undefined ? 0 : SECOND_MS / perSecond;
    this.#evenGapMs = perSecond === undefined || options.evenly === false ? 0 : (SECOND_MS + this.#margin + SPACING_SLACK_MS) / perSecond;
  }

  #nextStartAt(now: number): number {
    let t = Math.max(this.#pausedUntil, this.#holdUntil, this.#nextSlot);
    if (this.#second !== undefined) t = Math.max(t, this.#second.readyAt());
    if (this.#hour !== undefined) t = Math.max(t, this.#hour.readyAt());
    if (this.#gapMs > 0 && now < this.#gapUntil) t = Math.max(t, Math.min(Math.max(this.#lastStart, this.#gapFrom) + this.#gapMs, this.#gapUntil));
    return t;
  }

  #disarm(): void {
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
    this.#timerAt = Number.NaN;
  }

  #tellLongWait(at: number, now: number): void {
    const onLongWait = this.#options.onLongWait;
    if (onLongWait === undefined || at - now <= LONG_WAIT_MS) return;
    const reason: WaitReason =
      this.#hour !== undefined && this.#hour.readyAt() === at ? 'hourly' : this.#pausedUntil === at ? 'retry-after' : this.#holdUntil === at ? 'server-window' : 'rate';
    // the same wait, re-armed by each request that joins it a few ms later, or held for a second reason: told once
    if (Math.abs(at - this.#toldUntil) < 1_000) return;
    this.#toldUntil = at;
    onLongWait({ untilMs: at, reason });
  }

  #arm(at: number, now: number): void {
    this.#tellLongWait(at, now);
    if (this.#cancelTimer !== undefined && this.#timerAt === at) return;
    this.#disarm();
    this.#timerAt = at;
    this.#cancelTimer = this.#clock.setTimer(() => {
      this.#cancelTimer = undefined;
      this.#timerAt = Number.NaN;
      this.#pump();
    }, at - now);
  }

  /** Starts the waiters whose turn has come, in line; arms a timer for the next. */
  #pump(): void {
    const now = this.#clock.now();
    while (this.#queue.length > 0) {
      const at = this.#nextStartAt(now);
      if (at > now) {
        this.#arm(at, now);
        return;
      }
      const waiter = this.#queue.shift() as Waiter;
      if (waiter.onAbort !== undefined) waiter.signal?.removeEventListener('abort', waiter.onAbort);
      waiter.resolve(this.#start(now));
    }
    this.#disarm();
  }

  /** Counts a start now and returns its ticket. */
  #start(now: number): number {
    this.#second?.add(now);
    this.#hour?.add(now);
    this.#lastStart = now;
    // a start a little after its slot keeps the timeline; after an idle spell it starts afresh
    if (this.#evenGapMs > 0) this.#nextSlot = (this.#nextSlot >= now - CATCH_UP_MS ? this.#nextSlot : now) + this.#evenGapMs;
    if (this.#second !== undefined || this.#hour !== undefined) this.#allowedAt.set(this.#issued, now);
    this.#issued += 1;
    return this.#issued - 1;
  }

  acquire(signal?: AbortSignal): Promise<number> {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    if (this.#queue.length === 0) {
      // the common case: nobody waiting and a start allowed now
      const now = this.#clock.now();
      if (this.#nextStartAt(now) <= now) return Promise.resolve(this.#start(now));
    }
    return new Promise<number>((resolve, reject) => {
      const waiter: Waiter = { resolve, reject, signal };
      if (signal !== undefined) {
        waiter.onAbort = () => {
          const at = this.#queue.indexOf(waiter);
          if (at >= 0) this.#queue.splice(at, 1);
          reject(abortReason(signal));
          this.#pump();
        };
        signal.addEventListener('abort', waiter.onAbort, { once: true });
      }
      this.#queue.push(waiter);
      this.#pump();
    });
  }

  pause(untilMs: number): void {
    if (untilMs <= this.#pausedUntil) return;
    this.#pausedUntil = untilMs;
    this.#pump();
  }

  markSent(ticket: number): void {
    const at = this.#allowedAt.get(ticket);
    if (at === undefined) return;
    this.#allowedAt.delete(ticket);
    const now = this.#clock.now();
    if (now <= at) return;
    // a later start can only push the next one later; a timer already set re-checks when it fires
    this.#second?.move(at, now);
    this.#hour?.move(at, now);
  }

  release(ticket: number): void {
    this.#allowedAt.delete(ticket);
  }

  observe(info: RateLimitInfo, ticket: number): void {
    if (info.remaining === undefined || info.resetInMs === undefined) return;
    // an answer to an earlier start knows less than one already taken into account
    if (ticket < this.#newestObserved) return;
    this.#newestObserved = ticket;
    // a window longer than an hour is no window this pacer knows of (or a clock far off): ignore it
    if (info.resetInMs > HOUR_MS + 60_000) return;
    const now = this.#clock.now();
    const resetAt = now + info.resetInMs;
    // starts after this one may not be counted in its Remaining yet
    const budget = info.remaining - (this.#issued - ticket - 1);
    if (budget <= 0) {
      this.#holdUntil = Math.max(this.#holdUntil, resetAt + this.#margin);
      this.#gapMs = 0;
    } else {
      const spread = info.resetInMs / budget;
      this.#gapMs = spread > this.#nominalGapMs ? spread : 0;
      this.#gapUntil = resetAt;
      this.#gapFrom = now;
    }
    this.#pump();
  }

  get heldUntil(): number {
    const held = Math.max(this.#pausedUntil, this.#holdUntil);
    return held > this.#clock.now() ? held : 0;
  }

  get started(): number {
    return this.#issued;
  }
}
