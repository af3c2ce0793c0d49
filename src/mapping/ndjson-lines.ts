// NDJSON lines -> items. A line is an item (of --kind, or of the kind its fields suggest), a
// request-shaped object whose items are taken one by one, or a line of a rejects file fed back in,
// whose row is read again the way its own file was (CSV rows by their headers).
import { inexactNumberIn } from '../model/exact-numbers.js';
import { IDENTIFIER_FIELDS } from '../model/fields.js';
import { CSV_ROW_TEXT, isCsvTextReason } from '../model/csv-reasons.js';
import { ARRAY_NAMES, type ArrayName } from '../model/types.js';
import { mapCsvRow, readCsvHeader, type CsvHeader } from './csv-rows.js';
import type { CellOptions } from './export-cells.js';
import { inferKind, isKind } from './kind.js';

/** An item to check, or a part of a line that is no item at all. */
export type LineItem =
  | { kind: ArrayName; item: unknown; row: unknown; errors?: string[]; failed?: string[] }
  | { kind: ArrayName | 'unknown'; row: unknown; errors: string[] };

type Obj = Record<string, unknown>;

function isObject(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Request-shaped: carries an array named attributes, events or purchases and no identifier of its own. */
function isRequestShaped(value: Obj): boolean {
  if (!ARRAY_NAMES.some((name) => Array.isArray(value[name]))) return false;
  for (const key of IDENTIFIER_FIELDS) if (value[key] !== undefined) return false;
  return value.push_token_import === undefined;
}

const REJECT_KEYS = new Set(['file', 'line', 'item', 'kind', 'row', 'errors', 'column', 'value']);

/**
 * A line of a rejects file: `{"file", "line", "kind", "row", "errors"}` (and `column`, `value` for a
 * field dropped from its row). Once fixed, its `errors` may be gone: then it holds no other key.
 */
function isRejectRecord(value: Obj): boolean {
  if (typeof value.file !== 'string' || typeof value.line !== 'number' || !('row' in value)) return false;
  if (Array.isArray(value.errors)) return true;
  if (value.errors !== undefined) return false;
  for (const key in value) if (!REJECT_KEYS.has(key)) return false;
  return true;
}

const CSV_NAME = /\.csv(\.gz)?$/i;

/**
 * A reject whose row is the text of a CSV row rather than of an NDJSON line: from a CSV file, or
 * (standard input, --format csv, a rejects file fed back) rejected for a reason only CSV text has.
 */
function isCsvRowText(reject: Obj): boolean {
  return CSV_NAME.test(reject.file as string) || ((reject.errors as unknown[] | undefined) ?? []).some(isCsvTextReason);
}

function cellText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === null) return 'null';
  if (value === undefined) return '';
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

export interface LineMapperOptions {
  /** --kind: the kind of item lines (request-shaped lines and rejects carry their own). */
  kind?: ArrayName;
  /** How the cells of CSV rows fed back are read (times, phones, lists). */
  cells?: CellOptions;
}

/** Maps parsed NDJSON lines to items; keeps what it read of fed-back CSV rows' headers between calls. */
export function createLineMapper(options: LineMapperOptions = {}): (value: unknown) => LineItem[] {
  const headers = new Map<string, CsvHeader | string[]>();

  const csvRow = (row: Obj, kind: ArrayName | undefined): LineItem => {
    const header = Object.keys(row);
    const cacheKey = `${kind ?? ''}\u0000${header.join('\u0000')}`;
    let parsed = headers.get(cacheKey);
    if (parsed === undefined) {
      const result = readCsvHeader(header, { kind, cells: options.cells });
      parsed = result.ok ? result.header : result.problems.map((p) => `row: ${p}`);
      if (headers.size > 1000) headers.clear();
      headers.set(cacheKey, parsed);
    }
    if (Array.isArray(parsed)) return { kind: kind ?? 'unknown', row, errors: parsed };
    return { kind: parsed.kind, row, ...mapCsvRow(parsed, header.map((key) => cellText(row[key]))) };
  };

  const itemsOf = (value: unknown, kind: ArrayName | undefined, depth: number): LineItem[] => {
    if (!isObject(value)) {
      return [{ kind: kind ?? 'unknown', row: value, errors: ['line: must be a JSON object (an item, or a request with attributes, events, purchases)'] }];
    }
    if (isRejectRecord(value) && depth === 0) {
      const ownKind = isKind(value.kind) ? value.kind : kind;
      const row = value.row;
      if (typeof row === 'string' && isCsvRowText(value)) {
        return [{ kind: ownKind ?? 'unknown', row, errors: [CSV_ROW_TEXT] }];
      }
      if (typeof row === 'string') {
        // a line that could not be read: read the fixed text again, as the line was
        let parsed: unknown;
        try {
          parsed = JSON.parse(row);
        } catch (error) {
          return [{ kind: ownKind ?? 'unknown', row, errors: [`row: is not valid JSON (${(error as Error).message})`] }];
        }
        const inexact = inexactNumberIn(row);
        if (inexact !== undefined) return [{ kind: ownKind ?? 'unknown', row, errors: [`row${inexact.path === '' ? '' : `.${inexact.path}`}: ${inexact.message}`] }];
        return itemsOf(parsed, ownKind, depth + 1);
      }
      const fromCsv =
        CSV_NAME.test(value.file as string) ||
        (value.file === '-' && isObject(row) && Object.values(row).every((cell) => typeof cell === 'string'));
      if (fromCsv && isObject(row)) return [csvRow(row, ownKind)];
      if (row === null || row === undefined) {
        return [{ kind: ownKind ?? 'unknown', row: null, errors: ['row: is empty; write the row to send in its place'] }];
      }
      return itemsOf(row, ownKind, depth + 1);
    }
    if (isRequestShaped(value)) {
      const items: LineItem[] = [];
      for (const name of ARRAY_NAMES) {
        const list = value[name];
        if (list === undefined) continue;
        if (!Array.isArray(list)) {
          items.push({ kind: name, row: list, errors: [`${name}: must be an array of ${name} items`] });
          continue;
        }
        for (const item of list) items.push({ kind: name, item, row: item });
      }
      return items;
    }
    return [{ kind: kind ?? inferKind(Object.keys(value)), item: value, row: value }];
  };

  return (value) => itemsOf(value, options.kind, 0);
}
