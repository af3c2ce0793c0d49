// The sending thread's young generation, held at 16 MB while a client of track's own process is
// open. V8 doubles a heap's young generation whenever as many bytes as it holds have survived its
// collections since it last grew, and Node lets this thread's grow to 32 MB, a size fixed at start-up
// (--max-semi-space-size). Requests in flight and the plan's messages waiting to be taken survive a
// collection or two, so any upload of a million rows or more grew it to 32 MB: 13 MB more of its
// peak RSS (137 against 124 MB at 1M rows). 16 MB serves the sending as well: the same CPU time
// within the noise (1.02 times at 1M rows, the median of 8 runs each, alternating).
import { PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { heldSetting, startedWithV8Flag } from './v8-setting.js';

/** The young generation's size (its two halves) at which it grows no further. */
export const YOUNG_GENERATION_CAP_BYTES = 16 * 1024 * 1024;
const GROWTH = { held: '--semi-space-growth-factor=1', free: '--semi-space-growth-factor=2' };
/**
 * The V8s on which holding pays: on V8 11 (Node 20), 14 MB less at the peak of 1M rows for 1.5% more
 * CPU time. On V8 12 and 13 (Node 22 and 24) a planning thread started at its full young generation
 * collects its old generation 35 times in 1M rows instead of once: 18 to 23% more CPU time for 8 to
 * 9 MB; without that start it is pinned small and does four times the collections.
 */
export const holdsYoungGenerationOn = (v8Version: string): boolean => v8Version.split('.')[0] === '11';
/**
 * V8 is left to size young generations as it does: the process was started with young generation
 * flags of its own, or runs on a V8 on which holding them costs more than it saves.
 */
export const youngGenerationLeftAlone =
  startedWithV8Flag(/^--(semi-space-growth-factor|max-semi-space-size|min-semi-space-size|max-heap-size)/) || !holdsYoungGenerationOn(process.versions.v8);
let observer: PerformanceObserver | undefined;

/** This thread's young generation in bytes (both halves, as V8 counts its new space). */
export function youngGenerationBytes(): number {
  return getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.space_size ?? 0;
}

function check(): void {
  if (youngGenerationBytes() >= YOUNG_GENERATION_CAP_BYTES) setFlagsFromString(GROWTH.held);
}

/**
 * Holds the young generation again, if it is held: V8 sets its growth factor back when it makes a
 * worker's heap, and once this one's has been held a while, the next collection after that would
 * grow it. Called when a worker of this process's is online.
 */
export function holdAgain(): void {
  if (observer !== undefined) check();
}

/**
 * Holds this thread's young generation at YOUNG_GENERATION_CAP_BYTES once it has grown to it (V8
 * keeps growing it until then); returns the release, after which it may grow again. The setting is
 * the process's: every heap in it grows no further meanwhile (the planning thread's starts at its
 * full size: worker/in-worker.ts).
 */
export const holdYoungGeneration = heldSetting({
  set() {
    check();
    // V8 reads its growth factor each time it grows a young generation, and sets it back to 2 when
    // it makes a heap (a worker thread's: seen on Node 20), so it is looked at after every collection
    // (and by holdAgain())
    observer = new PerformanceObserver(check);
    observer.observe({ entryTypes: ['gc'] });
  },
  unset() {
    observer?.disconnect();
    observer = undefined;
    setFlagsFromString(GROWTH.free);
  },
  leftAlone: youngGenerationLeftAlone,
});
