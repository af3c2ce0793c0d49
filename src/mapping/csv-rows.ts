// CSV rows -> items: the header (after --map) is read once into a CsvHeader, then each row's cells are
// read through it. An empty cell leaves its field out; a cell reading `null` removes the field.
import type { ItemOrigin } from '../model/request.js';
import type { ArrayName } from '../model/types.js';
import { CellProblem, readInferred, type Annotation, type CellReader } from './cells.js';
import { mapEntryOf, type ColumnMap } from './column-map.js';
import { parseColumnSpec, readerFor } from './columns.js';
import type { CellOptions } from './export-cells.js';
import { identifierNotes, TYPE_COUNT_SLOTS, typeCounter, type TypeCounts } from './header-notes.js';
import { EMPTY_AS_NULL_FED_BACK, nullsWhenEmpty } from './empty-as-null.js';
import { inferKind } from './kind.js';
import { rowMapper, type NullWhenEmpty, type RowMapper } from './row-mapper.js';

/** Keys a rejected row of the wrong width carries in the rejects file, to be removed once fixed. */
export const EXTRA_CELLS_KEY = '_extra_cells';
export const MISSING_COLUMNS_KEY = '_missing_columns';
/**
 * Columns a CSV rejects file adds to each row (--rejects-format csv); read back, they are no fields
 * (`_kind` says the row's kind: kind-column.ts).
 */
export const REJECT_COLUMNS: readonly string[] = ['_file', '_line', '_kind', '_column', '_errors'];

export interface CsvColumn {
  index: number;
  /** The field, as messages name it: `properties.plan`, with the file's column name if --map renamed it. */
  label: string;
  /** The field name without annotation (the prefix of its messages). */
  field: string;
  path: string[];
  read: CellReader;
}

export interface CsvHeader {
  kind: ArrayName;
  /** How many cells every row has. */
  width: number;
  columns: CsvColumn[];
  /** For each cell position, its key in a row of the rejects file (the header after --map), or undefined when --map leaves it out. */
  keys: Array<string | undefined>;
  /** The part of jsonBytesBound() that does not depend on the cells. */
  fixedBytes: number;
  mapRow: RowMapper;
  /** The attributes sent as null when their cells are empty (--empty-as-null); a Parquet file's mapper takes them too. */
  nulls: readonly NullWhenEmpty[];
  /** For each column read by inference, how many of its cells became each type (see header-notes.ts). */
  typeCounts: TypeCounts[];
}

export type CsvHeaderResult = { ok: true; header: CsvHeader; notes: string[] } | { ok: false; problems: string[] };

export interface CsvHeaderOptions {
  kind?: ArrayName;
  map?: ColumnMap;
  /** How cells are read beyond their annotation: times, dates, phones, lists. */
  cells?: CellOptions;
}

const IDENTIFYING = ['external_id', 'user_alias', 'service_id', 'email', 'phone'];

/** Whether a header's fields can name each row's user: push_token_import does so for attributes alone (spec 2.5). */
function namesTheUser(kind: ArrayName, tops: ReadonlySet<string>): boolean {
  return IDENTIFYING.some((name) => tops.has(name)) || (kind === 'attributes' && tops.has('push_token_import'));
}

function fixedProblem(message: string): CellReader {
  const problem = new CellProblem(message);
  return () => problem;
}

export function readCsvHeader(header: readonly string[], options: CsvHeaderOptions = {}): CsvHeaderResult {
  const problems: string[] = [];
  const notes: string[] = [];
  const keys: Array<string | undefined> = [];
  const specs: Array<{ index: number; key: string; source: string; spec: ReturnType<typeof parseColumnSpec> }> = [];
  let fedBack = false;
  header.forEach((source, index) => {
    const mapped = mapEntryOf(options.map, source);
    if (mapped === null) {
      keys.push(undefined);
      return;
    }
    const key = mapped ?? source;
    if (mapped === undefined && REJECT_COLUMNS.includes(key)) {
      fedBack = true;
      keys.push(undefined); // a rejects file read back: where the row was and why, not a field
      return;
    }
    keys.push(key);
    // spaces around a header name are taken for an accident: " email" is the email column
    const name = key.trim();
    if (name === '') return; // an unnamed column: its cells must stay empty (below)
    specs.push({ index, key, source, spec: parseColumnSpec(name) });
  });

  const byField = new Map<string, number>();
  for (const { index, key, source, spec } of specs) {
    if ('problem' in spec) {
      // a name --map gave: the mistake is in the map, whose entry is what to change
      if (key !== source) problems.push(`column ${index + 1} "${source}", which --map names ${JSON.stringify(key)}: ${spec.problem.replace(/ \(to keep a colon in a field name, rename the column with --map\)$/, '')}; change that entry of --map`);
      else problems.push(`column ${index + 1} "${source}": ${spec.problem}`);
      continue;
    }
    if (spec.path.includes('__proto__')) {
      problems.push(`column ${index + 1} "${source}": __proto__ cannot be a field name`);
      continue;
    }
    const earlier = byField.get(spec.field);
    if (earlier !== undefined) problems.push(`columns ${earlier + 1} and ${index + 1} both fill "${spec.field}"`);
    else byField.set(spec.field, index);
  }
  for (const [field, index] of byField) {
    const path = field.split('.');
    for (let depth = 1; depth < path.length; depth += 1) {
      const parent = byField.get(path.slice(0, depth).join('.'));
      if (parent !== undefined) {
        problems.push(`column ${index + 1} "${field}" is inside column ${parent + 1} "${path.slice(0, depth).join('.')}"; keep one of them`);
      }
    }
  }
  if (problems.length > 0) return { ok: false, problems };

  const tops = new Set([...byField.keys()].map((field) => field.split('.')[0]));
  const kind = options.kind ?? inferKind(tops);
  const likely = identifierNotes(kind, specs.flatMap(({ source, spec }) => ('problem' in spec ? [] : [{ source, field: spec.field }])), tops);
  if (!namesTheUser(kind, tops)) {
    const named = 'the header has no column that names the user: external_id, user_alias.alias_name, service_id, email or phone';
    return { ok: false, problems: [named, ...likely.fixes] };
  }
  notes.push(...likely.notes);

  const columns: CsvColumn[] = [];
  const annotations = new Map<number, Annotation | undefined>();
  const typeCounts: TypeCounts[] = [];
  header.forEach((source, index) => {
    const key = keys[index];
    if (key !== undefined && key.trim() === '') {
      columns.push({
        index,
        label: `column ${index + 1}`,
        field: `column ${index + 1}`,
        path: [''],
        read: fixedProblem('has no name in the header; name the column or leave its cells empty'),
      });
    }
  });
  for (const { index, key, source, spec } of specs) {
    if ('problem' in spec) continue;
    const label = key === source ? spec.field : `${spec.field} (column "${source}")`;
    let read: CellReader;
    if (spec.field === EXTRA_CELLS_KEY || spec.field === MISSING_COLUMNS_KEY) {
      read = fixedProblem('the row had the wrong number of cells; put each value under its column, then remove this key');
    } else {
      const reader = readerFor(kind, spec, options.cells);
      if (typeof reader !== 'function') {
        problems.push(`column ${index + 1} "${source}": ${reader.problem}`);
        continue;
      }
      if (reader === readInferred) {
        // how many cells of the column become each type: a column of mixed types is reported
        const separator = options.cells?.arraySeparator;
        const counts: TypeCounts = { column: source, field: spec.field, counts: new Float64Array(TYPE_COUNT_SLOTS), separator };
        typeCounts.push(counts);
        read = typeCounter(counts.counts, separator);
      } else read = reader;
    }
    columns.push({ index, label, field: spec.field, path: spec.path, read });
    annotations.set(index, spec.annotation);
  }
  if (problems.length > 0) return { ok: false, problems };
  columns.sort((a, b) => a.index - b.index);
  const emptyAsNull = options.cells?.emptyAsNull === true;
  if (emptyAsNull && fedBack) notes.push(EMPTY_AS_NULL_FED_BACK);
  const nulls = emptyAsNull && !fedBack ? nullsWhenEmpty(kind, columns.map(({ index, path }) => ({ index, path, annotation: annotations.get(index) }))) : [];
  // per column: its key (each name escaped, quoted, a colon), braces for each level, a comma, and
  // the longest wrapper a value can get ({"$time": ...}); see jsonBytesBound
  let fixedBytes = 2;
  for (const column of columns) fixedBytes += 6 * column.field.length + 8 * column.path.length + 16;
  const mapRow = rowMapper(columns, nulls);
  return { ok: true, header: { kind, width: header.length, columns, keys, fixedBytes, mapRow, nulls, typeCounts }, notes };
}

export interface MappedRow {
  item: Record<string, unknown>;
  /** Cells that could not be read, each `field: reason`; their fields are left out of the item. */
  errors?: string[];
  /** The fields of those cells, so the validator's view of them can be set aside. */
  failed?: string[];
  /**
   * The attributes sent as null because their cells were empty (--empty-as-null), so that a null an
   * empty cell made is told from one a cell wrote (`null`).
   */
  emptied?: string[];
}

/**
 * At least the UTF-8 bytes of the item's JSON, without building it: a character of cell text never
 * takes more than 6 bytes of JSON (`\u001f`), and no reader makes a value longer than that (a
 * number such as 1e20 written out grows most, to 21 bytes from 4).
 */
export function jsonBytesBound(header: CsvHeader, cells: readonly string[]): number {
  let chars = 0;
  for (const cell of cells) chars += cell.length;
  return header.fixedBytes + 6 * chars;
}

/** The wrong width of a row, as its error, or undefined when it has a cell for every column. */
export function widthProblem(header: CsvHeader, cells: readonly string[]): string | undefined {
  if (cells.length === header.width) return undefined;
  return `row: has ${cells.length} ${cells.length === 1 ? 'cell' : 'cells'}; the header has ${header.width} columns`;
}

export function mapCsvRow(header: CsvHeader, cells: readonly string[]): MappedRow {
  const mapping = header.mapRow(cells);
  const { item, refused, emptied } = mapping;
  if (refused === undefined) return mapping;
  return {
    item,
    errors: refused.map(([i, problem]) => `${header.columns[i].label}: ${problem.message}`),
    failed: refused.map(([i]) => header.columns[i].field),
    ...(emptied === undefined ? {} : { emptied }),
  };
}

/**
 * A row as the rejects file shows it: each cell's text under its header (after --map), so it can be
 * fixed and read again. A row of the wrong width keeps what does not fit under the marker keys.
 */
export function csvRowObject(header: Pick<CsvHeader, 'keys' | 'width'>, cells: readonly string[]): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  const shared = Math.min(cells.length, header.width);
  for (let i = 0; i < shared; i += 1) {
    const key = header.keys[i];
    if (key !== undefined) row[key] = cells[i];
  }
  if (cells.length > header.width) row[EXTRA_CELLS_KEY] = cells.slice(header.width);
  if (cells.length < header.width) {
    row[MISSING_COLUMNS_KEY] = header.keys.slice(cells.length).filter((key): key is string => key !== undefined);
  }
  return row;
}

/** Rows of more cells than this keep them as one text and a length each: 20,000 small strings cost four times as much. */
const WIDE_ROW_CELLS = 256;

/**
 * Where a CSV row's item came from. A class with a getter, unlike the rest of this code, so that the
 * row object for the rejects file is built only for the few rows that need one: building it for
 * every row cost more than mapping the row.
 */
export class CsvRowOrigin implements ItemOrigin {
  readonly #cells: readonly string[] | undefined;
  /** A wide row's cells, one after another, and the length of each. */
  readonly #text: string | undefined;
  readonly #lengths: Uint32Array | undefined;

  constructor(
    readonly file: string,
    readonly line: number,
    readonly header: CsvHeader,
    cells: readonly string[],
  ) {
    if (cells.length <= WIDE_ROW_CELLS) this.#cells = cells;
    else {
      this.#text = cells.join('');
      this.#lengths = Uint32Array.from(cells, (cell) => cell.length);
    }
  }

  get width(): number {
    return this.#cells?.length ?? this.#lengths!.length;
  }

  get cells(): readonly string[] {
    if (this.#cells !== undefined) return this.#cells;
    const cells: string[] = [];
    let at = 0;
    for (const length of this.#lengths!) cells.push(this.#text!.slice(at, (at += length)));
    return cells;
  }

  /** Writes the length of each cell to `lengths` from `at`, and returns `text` followed by the cells. */
  appendCells(text: string, lengths: Uint32Array, at: number): string {
    if (this.#cells === undefined) {
      lengths.set(this.#lengths!, at);
      return text + this.#text!;
    }
    for (const cell of this.#cells) {
      text += cell;
      lengths[at++] = cell.length;
    }
    return text;
  }

  get row(): Record<string, unknown> {
    return csvRowObject(this.header, this.cells);
  }

  toJSON(): ItemOrigin {
    return { file: this.file, line: this.line, row: this.row };
  }
}
