// A CSV rejects file of inputs of several kinds (--rejects-format csv) holds attributes rows beside
// events or purchases under one header, so a row's `_kind` cell says what it is: read back, each row
// is read through the header as its kind reads it. --kind, when given, says it for every row.
import type { ArrayName } from '../model/types.js';
import { readCsvHeader, type CsvHeader, type CsvHeaderOptions, type CsvHeaderResult } from './csv-rows.js';
import { isKind } from './kind.js';

/** The column of a CSV rejects file that names each row's kind. */
export const KIND_COLUMN = '_kind';

const KINDS: readonly ArrayName[] = ['attributes', 'events', 'purchases'];

/** Where the header has a `_kind` column that decides each row's kind (not renamed by --map, no --kind), or -1. */
export function kindColumnOf(cells: readonly string[], options: CsvHeaderOptions): number {
  if (options.kind !== undefined) return -1;
  const index = cells.indexOf(KIND_COLUMN);
  return index === -1 || options.map?.has(KIND_COLUMN) === true ? -1 : index;
}

/**
 * The header of a file: with a `_kind` column, usable when any kind can read it (the kind its columns
 * suggest first), since a column of one kind's rows (`visits:inc`) is no column of another's.
 */
export function readRowsHeader(cells: readonly string[], options: CsvHeaderOptions): CsvHeaderResult {
  const first = readCsvHeader(cells, options);
  if (first.ok || kindColumnOf(cells, options) === -1) return first;
  for (const kind of KINDS) {
    const other = readCsvHeader(cells, { ...options, kind });
    if (other.ok) return other;
  }
  return first;
}

/** A row's header by its `_kind` cell, or why the row cannot be read (its errors). */
export type RowHeader = CsvHeader | { kind: ArrayName; errors: string[] };

/**
 * For a file with a `_kind` column, the header each row is read through (each kind's made once, when
 * a row first names it); undefined for any other file, whose rows are all read through `main`.
 */
export function rowHeaders(
  cells: readonly string[],
  options: CsvHeaderOptions,
  main: CsvHeader,
): { pick(row: readonly string[]): RowHeader; others(): CsvHeader[] } | undefined {
  const index = kindColumnOf(cells, options);
  if (index === -1) return undefined;
  const byKind = new Map<string, RowHeader>();
  const pick = (row: readonly string[]): RowHeader => {
    const text = (row[index] ?? '').trim();
    if (text === '' || text === main.kind) return main;
    let header = byKind.get(text);
    if (header === undefined) {
      if (!isKind(text)) header = { kind: main.kind, errors: [`${KIND_COLUMN}: must be attributes, events or purchases (or empty), got ${JSON.stringify(text)}`] };
      else {
        const result = readCsvHeader(cells, { ...options, kind: text });
        header = result.ok ? result.header : { kind: text, errors: result.problems.map((problem) => `row: read as ${text}, ${problem}`) };
      }
      byKind.set(text, header);
    }
    return header;
  };
  /** The headers made for rows of other kinds than main's (their mixed-type notes). */
  const others = (): CsvHeader[] => [...byKind.values()].filter((header): header is CsvHeader => !('errors' in header));
  return { pick, others };
}
