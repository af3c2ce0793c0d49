// The latest N start times, for "at most N starts in any window": a new start may come once the
// oldest of them is a window old. A start is first counted at the moment it was allowed, then
// moved to when the request actually left (a new connection can hold it back), so the server,
// which sees sending times, never counts more than N in its own window.
import { firstAtLeast } from './sorted.js';

export interface StartWindow {
  /** Counts a start at time t. */
  add(t: number): void;
  /** Moves a start counted at `from` to the later time `to`. */
  move(from: number, to: number): void;
  /** The earliest time another start may come (-Infinity while fewer than N are counted). */
  readyAt(): number;
  /** How many start times it holds. */
  size(): number;
}

/**
 * Starts are counted at the clock's time, which only goes forward. A start a window older than one
 * counted now shares no window with any start to come, so it is let go: a cap far above the rate
 * (`--rate 1000000`) holds the last window's starts rather than every start of the run (200,000
 * times, 6 MB of arrays grown and dropped, in an upload of 10 million rows).
 */
export function createStartWindow(capacity: number, spanMs: number): StartWindow {
  // ascending; the live part starts at `first` (dropping from the front without shifting each time)
  let times: number[] = [];
  let first = 0;

  const size = (): number => times.length - first;

  /** Index of the first live time that is >= t. */
  const lowerBound = (t: number): number => firstAtLeast(times, t, first);

  const insert = (t: number): void => {
    while (first < times.length && times[first] + spanMs <= t) first += 1;
    if (size() === capacity) {
      // only the latest N matter: a time older than all of them changes nothing
      if (t <= times[first]) return;
      first += 1;
    }
    if (times.length === 0 || t >= times[times.length - 1]) times.push(t);
    else times.splice(lowerBound(t), 0, t);
    // the dropped front is cut off once it outweighs the live part (or the N it may hold)
    if (first > Math.min(capacity, Math.max(size(), 64))) {
      times = times.slice(first);
      first = 0;
    }
  };

  return {
    add: insert,
    move(from, to) {
      const at = lowerBound(from);
      if (at < times.length && times[at] === from) times.splice(at, 1);
      // else `from` had already dropped out (of the latest N, or as a window old): `to` may belong there now
      insert(to);
    },
    readyAt() {
      return size() < capacity ? Number.NEGATIVE_INFINITY : times[first] + spanMs;
    },
    size,
  };
}
