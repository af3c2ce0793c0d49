// Time as the transport sees it, injectable so pacing and backoff can be tested without waiting.

export interface Clock {
  /** Monotonic milliseconds, for windows and delays. */
  now(): number;
  /** Wall-clock epoch milliseconds, for headers that name a point in time. */
  wallNow(): number;
  /** Calls fn after ms; returns a function that cancels it. */
  setTimer(fn: () => void, ms: number): () => void;
}

export const systemClock: Clock = {
  now: () => performance.now(),
  wallNow: () => Date.now(),
  setTimer(fn, ms) {
    // setTimeout fires at once beyond 2^31-1 ms; a longer wait wakes early and is set again
    const timer = setTimeout(fn, Math.min(Math.max(0, ms), 2 ** 31 - 1));
    return () => clearTimeout(timer);
  },
};

/** The reason a wait ended early: the signal fired. */
export function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error('aborted');
}

/** The promise's outcome, or the signal's reason once it fires first. */
export function unlessAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(abortReason(signal));
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  return Promise.race([promise, aborted]).finally(() => signal.removeEventListener('abort', onAbort!));
}

/** Waits ms on the clock; rejects with the signal's reason when it fires first. */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(abortReason(signal));
  if (ms <= 0 && signal === undefined) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      cancel();
      reject(abortReason(signal as AbortSignal));
    };
    const cancel = clock.setTimer(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
