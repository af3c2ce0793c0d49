// A RequestLine (a request-shaped NDJSON line) yields several items that may travel in different requests, but the
// journal settles rows. Such a line is recorded only once every one of its items has settled (sent
// or rejected), so a resume never skips an item that was not delivered; until then each of its
// items delivered is recorded on its own, so a resume does not send that one again. The rows it
// settles are counted, journal or not: the rows read and not counted are what a stopped run left
// unsettled.
import { itemCounts, type SettledRequest } from '../transport/request.js';
import type { Journal } from './journal.js';

type Origins = SettledRequest['origins'];

export function lineLedger(journal: Journal | undefined) {
  const waiting = new Map<string, number>();
  /** Rows every item of which settled in this run: answered, rejected before sending, or left out as held by the target. */
  let settledRows = 0;
  const settle = (file: string, line: number): boolean => {
    const key = `${line}\u0000${file}`;
    const left = waiting.get(key);
    if (left === undefined) return true;
    if (left > 1) waiting.set(key, left - 1);
    else waiting.delete(key);
    return left === 1;
  };
  return {
    get settledRows(): number {
      return settledRows;
    },
    expect(file: string, line: number, items: number): void {
      waiting.set(`${line}\u0000${file}`, items);
    },
    /** A row (or an item of a RequestLine) settled without being sent: rejected before sending, or known to the target already. */
    settledUnsent(file: string, line: number, item?: number): void {
      if (line <= 0) return;
      if (settle(file, line)) {
        settledRows += 1;
        journal?.recordRows(file, [line]);
      } else if (item !== undefined) journal?.recordItem(file, line, item);
    },
    /** Rows of one item each settled without being sent (the target held them already), as [first, last] line ranges. */
    settledUnsentRows(file: string, ranges: ReadonlyArray<readonly [number, number]>): void {
      for (const [first, last] of ranges) settledRows += last - first + 1;
      journal?.recordRanges(file, ranges);
    },
    /** What deliver() journals: the rows behind a settled request. */
    journal: {
      record(request: SettledRequest): void {
        // no request-shaped line is waiting on items (a CSV, say): every item is a row, settled as it is
        if (waiting.size === 0) {
          const counts = itemCounts(request);
          settledRows += counts.attributes + counts.events + counts.purchases;
          return journal?.record(request);
        }
        const origins = request.origins;
        const ready = { attributes: [], events: [], purchases: [] } as { [K in keyof Origins]: Origins[K][number][] };
        for (const kind of ['attributes', 'events', 'purchases'] as const) {
          for (const origin of origins[kind]) {
            if (settle(origin.file, origin.line)) ready[kind].push(origin);
            else if (origin.item !== undefined) journal?.recordItem(origin.file, origin.line, origin.item);
          }
        }
        settledRows += ready.attributes.length + ready.events.length + ready.purchases.length;
        journal?.record({ origins: ready });
      },
      flush: async (): Promise<void> => {
        await journal?.flush();
      },
    },
  };
}
