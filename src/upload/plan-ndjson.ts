// An NDJSON file's lines (or a JSON array's elements, each a row read as a line is) -> the planner:
// a line is an item, a RequestLine of several items (of which an earlier run may have settled some),
// or a line of a rejects file fed back in.
import { InputError } from '../errors.js';
import { readNdjson, type NdjsonRecord } from '../input/ndjson.js';
import { inputBytes } from '../input/source.js';
import { createLineMapper } from '../mapping/ndjson-lines.js';
import type { ItemOrigin } from '../model/request.js';
import type { PlanEvent, PlanOptions, RowPlanner } from './plan.js';

/**
 * Stops an NDJSON file whose first line is `{` alone, before anything of it is sent: it is JSON
 * written out over lines (`jq` without -c), no line of which is an object but one's last lines.
 */
function spreadOut(record: NdjsonRecord, file: string): void {
  if ('error' in record && record.text.trim() === '{') {
    throw new InputError('is JSON written out over lines (its first line is { alone), not one object a line: read it with --format json, which takes such objects one after another, or write it with jq -c', file, record.line);
  }
}

/** The events of an NDJSON file (or, `json`, a .json file), a chunk of lines at a time. */
export async function* ndjsonChunks(file: string, planner: RowPlanner, options: PlanOptions, json = false): AsyncGenerator<PlanEvent[]> {
  const itemsOf = createLineMapper({ kind: options.kind, cells: options.reading });
  // NDJSON text is decoded chunk by chunk; a JSON array's reader holds its first chunks (it may read them again)
  const bytes = inputBytes(file, { stdin: options.stdin, onRead: (n) => planner.bytesRead(n), chunkBytes: options.chunkBytes, pieceBytes: options.pieceBytes, remote: options.remote, transient: !json });
  // the JSON parser is loaded for .json inputs only
  const lines = json
    ? (await import('../input/json-array.js')).readJson(bytes, file, { encoding: options.encoding })
    : readNdjson(bytes, { encoding: options.encoding, textRead: options.textRead });
  let first = true;
  for await (const records of lines) {
    for (const record of records) {
      const line = record.line;
      if (first && !json) spreadOut(record, file);
      first = false;
      if (planner.row(file, line)) continue;
      if ('error' in record) {
        planner.reject(file, line, options.kind ?? 'unknown', record.text, [record.error], undefined, record.fileLine);
        continue;
      }
      const entries = itemsOf(record.value);
      const several = entries.length > 1;
      // an earlier run that stopped part way through a RequestLine delivered some of its items
      const settled = several ? planner.settledItems(file, line) : undefined;
      if (settled !== undefined) {
        const left = entries.filter((_, place) => !settled.has(place)).length;
        planner.requestLine(file, line, left, entries.length - left);
        if (left === 0) continue;
      } else if (several) planner.requestLine(file, line, entries.length, 0);
      const inDoubt = planner.inDoubt(file, line);
      entries.forEach((entry, place) => {
        if (settled?.has(place) === true) return;
        const item = several ? place : undefined;
        if (inDoubt !== undefined) planner.reject(file, line, entry.kind, entry.row, [inDoubt], item, record.fileLine);
        else if (!('item' in entry)) planner.reject(file, line, entry.kind, entry.row, entry.errors, item, record.fileLine);
        else {
          const origin: ItemOrigin = { file, line, row: entry.row, ...(item === undefined ? {} : { item }), ...(record.fileLine === undefined ? {} : { fileLine: record.fileLine }) };
          planner.take(entry.kind, entry.item, origin, 6 * record.chars, entry);
        }
      });
    }
    yield planner.chunk(file);
  }
}
