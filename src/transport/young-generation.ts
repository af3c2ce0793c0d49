// The sending thread's young generation, held at 16 MB while a client of track's own process is
// open. V8 doubles a heap's young generation whenever as many bytes as it holds have survived its
// collections since it last grew, and Node lets this thread's grow to 32 MB, a size fixed at start-up
// (--max-semi-space-size). Requests in flight and the plan's messages waiting to be taken survive a
// collection or two, so any upload of a million rows or more grew it to 32 MB: 13 MB more of its
// peak RSS (137 against 124 MB at 1M rows). 16 MB serves the sending as well: the same CPU time
// within the noise (1.02 times at 1M rows, the median of 8 runs each, alternating).
import { PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';

/** The young generation's size (its two halves) at which it grows no further. */
export const YOUNG_GENERATION_CAP_BYTES = 16 * 1024 * 1024;
const GROWTH = { held: '--semi-space-growth-factor=1', free: '--semi-space-growth-factor=2' };
// a process started with its own young generation flags is left as it is (V8 reads `_` as `-`)
const OWN_FLAGS = /^--(semi-space-growth-factor|max-semi-space-size|min-semi-space-size|max-heap-size)/;
export const ownYoungGenerationFlags = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)].some((flag) =>
  OWN_FLAGS.test(flag.replaceAll('_', '-')),
);

let holders = 0;
let observer: PerformanceObserver | undefined;

/** This thread's young generation in bytes (both halves, as V8 counts its new space). */
export function youngGenerationBytes(): number {
  return getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.space_size ?? 0;
}

function check(): void {
  if (youngGenerationBytes() >= YOUNG_GENERATION_CAP_BYTES) setFlagsFromString(GROWTH.held);
}

/**
 * Holds this thread's young generation at YOUNG_GENERATION_CAP_BYTES once it has grown to it (V8
 * keeps growing it until then); returns the release, after which it may grow again. The setting is
 * the process's: every heap in it grows no further meanwhile (the planning thread's starts at its
 * full size: worker/in-worker.ts).
 */
export function holdYoungGeneration(): () => void {
  if (ownYoungGenerationFlags) return () => {};
  if (holders === 0) {
    check();
    // V8 reads its growth factor each time it grows a young generation, and sets it back to 2 when
    // it makes a heap (a worker thread's: seen on Node 20), so it is looked at after every collection
    observer = new PerformanceObserver(check);
    observer.observe({ entryTypes: ['gc'] });
  }
  holders += 1;
  let held = true;
  return () => {
    if (!held) return;
    held = false;
    holders -= 1;
    if (holders > 0) return;
    observer?.disconnect();
    observer = undefined;
    setFlagsFromString(GROWTH.free);
  };
}
