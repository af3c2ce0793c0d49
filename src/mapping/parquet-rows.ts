// Parquet rows -> items, as CSV rows become items: the column names are the header, read with the
// same --map, annotations, --kind and detection of kinds (readCsvHeader), and every column the
// header gives a reader of its own (an annotation, an identifier kept as text, a time, dob, a
// phone, a JSON field) reads the value's text as it reads a cell's. Any other column takes the
// value as its Parquet type says, where CSV would guess from the text: a number stays a number
// only while JavaScript holds it exactly, else the row is rejected naming the column. A null is
// left out, as an empty cell is (with --empty-as-null, sent as null where an empty cell would be).
import { numberTextProblem } from '../model/exact-numbers.js';
import type { ItemOrigin } from '../model/request.js';
import { isoString } from '../model/time.js';
import { Decimal, LocalTime, MAX_TIME_MS, NotText, TimeOutOfRange, Unsupported, type ValueAt } from '../model/typed-values.js';
import { CellProblem, readArray, readJson, readText, type CellReader } from './cells.js';
import { readCsvHeader, type CsvHeader, type CsvHeaderOptions, type MappedRow } from './csv-rows.js';
import { MAX_COMPILED_COLUMNS, type NullWhenEmpty } from './row-mapper.js';
import { wallToUtc } from './times.js';

/** How a value becomes a field: the field's value, a problem (the row is rejected), or undefined (left out). */
type Convert = (value: unknown) => unknown;

export interface ParquetHeader {
  csv: CsvHeader;
  /** For each of csv.columns, in order. */
  converts: Convert[];
  /** A row's item from its columns' values (compiled for the header, as CSV rows' mappers are). */
  mapRow: RowMapper;
}

export type ParquetHeaderResult = { ok: true; header: ParquetHeader; notes: string[] } | { ok: false; problems: string[] };

const OUT_OF_RANGE = 'past the years a time can be sent in (-271821 to 275760)';

const KEEP_AS_TEXT = 'type the column :string (in the file, or with --map) to send it as text';

/**
 * A value as its type says (`zone`: --timezone, for a TIMESTAMP not adjusted to UTC): the value,
 * or a CellProblem saying why it cannot be sent as it is.
 */
export function typedValue(value: unknown, zone: string): unknown {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      return Number.isFinite(value) ? value : new CellProblem(`is ${value}, which JSON cannot carry`);
    case 'bigint':
      return new CellProblem(numberTextProblem(String(value), KEEP_AS_TEXT)!);
  }
  if (value instanceof Decimal) {
    const problem = numberTextProblem(value.text, KEEP_AS_TEXT);
    return problem === undefined ? Number(value.text) : new CellProblem(problem);
  }
  if (value instanceof LocalTime) {
    const ms = wallToUtc(zone, value.wallMs);
    return Math.abs(ms) <= MAX_TIME_MS ? isoString(ms) : new CellProblem(`is a TIMESTAMP ${OUT_OF_RANGE}, got ${isoString(value.wallMs).slice(0, -1)} in ${zone}`);
  }
  if (value instanceof TimeOutOfRange) return new CellProblem(`is a ${value.type} ${OUT_OF_RANGE}, got ${value.text}`);
  if (value instanceof NotText) return new CellProblem(`holds ${value.bytes} bytes that are not UTF-8 text`);
  if (value instanceof Unsupported) return new CellProblem(`is of the type ${value.type}, which has no JSON form; leave the column out (--map "column": null)`);
  if (Array.isArray(value)) return nested(value, zone, (i) => `[${i}]`);
  if (typeof value === 'object' && value !== null) return nested(value as Record<string, unknown>, zone, (key) => `.${key}`);
  return value;
}

/** A LIST (nulls kept: an element must be something), or a STRUCT or MAP (null fields left out). */
function nested(value: Record<string, unknown> | unknown[], zone: string, step: (key: string) => string): unknown {
  const list = Array.isArray(value);
  const out: Record<string, unknown> | unknown[] = list ? [] : {};
  for (const [key, inner] of Object.entries(value)) {
    if ((inner === null || inner === undefined) && !list) continue;
    const read = inner === null || inner === undefined ? null : typedValue(inner, zone);
    if (read instanceof CellProblem) return new CellProblem(`${step(key)} ${read.message}`.replace(/^\./, ''));
    if (list) (out as unknown[]).push(read);
    else (out as Record<string, unknown>)[key] = read;
  }
  return out;
}

/** The text a CSV cell would hold for the value: what a column with a reader of its own reads. */
function valueText(value: unknown, zone: string): string | CellProblem {
  if (typeof value === 'string') return value;
  if (typeof value === 'bigint' || typeof value === 'boolean') return String(value);
  if (value instanceof Decimal) return value.text;
  const typed = typedValue(value, zone);
  if (typed instanceof CellProblem || typeof typed === 'string') return typed;
  return typeof typed === 'object' ? JSON.stringify(typed) : String(typed);
}

function converter(read: CellReader, plain: boolean, zone: string): Convert {
  if (plain) return (value) => typedValue(value, zone);
  return (value) => {
    if (typeof value === 'string') return read(value);
    // a STRUCT, MAP or LIST for a JSON or array column needs no trip through text
    if ((read === readJson || read === readArray) && typeof value === 'object' && !(value instanceof Decimal || value instanceof LocalTime)) {
      const typed = typedValue(value, zone);
      if (read === readArray && !(typed instanceof CellProblem) && !Array.isArray(typed)) return read(JSON.stringify(typed));
      return typed;
    }
    const text = valueText(value, zone);
    return text instanceof CellProblem ? text : read(text);
  };
}

/** The header of a Parquet file, from its column names: as a CSV header with those names reads. */
export function readParquetHeader(names: readonly string[], options: CsvHeaderOptions): ParquetHeaderResult {
  const result = readCsvHeader(names, options);
  if (!result.ok) return result;
  const header = result.header;
  // the columns CSV would guess a type for: here the value's type is known
  const plain = new Set(header.typeCounts.map((counts) => counts.field));
  const zone = options.cells?.timeZone ?? 'UTC';
  const kinds = header.columns.map((column): ColumnKind => (plain.has(column.field) ? 'plain' : column.read === readText ? 'text' : 'read'));
  const converts = header.columns.map((column, i) => converter(column.read, kinds[i] === 'plain', zone));
  const refusedRow: RefusedRow = (item, refused, emptied) => ({
    item,
    ...(refused === undefined
      ? {}
      : { errors: refused.map(([i, problem]) => `${header.columns[i].label}: ${problem.message}`), failed: refused.map(([i]) => header.columns[i].field) }),
    ...(emptied === undefined ? {} : { emptied }),
  });
  const { columns, nulls } = header;
  const mapRow =
    columns.length > MAX_COMPILED_COLUMNS ? loopMapper(columns, converts, refusedRow, nulls) : compiledMapper(columns, kinds, converts, refusedRow, nulls);
  return { ok: true, header: { csv: header, converts, mapRow }, notes: result.notes };
}

/** How a column's values are read: as their type says, kept when text (an identifier), or by its reader. */
type ColumnKind = 'plain' | 'text' | 'read';
/** The mapped row of an item some of whose values were refused, or some of whose attributes were emptied. */
type RefusedRow = (item: Record<string, unknown>, refused: Array<[number, CellProblem]> | undefined, emptied: string[] | undefined) => MappedRow;
/** The item of the row `at` of a batch, from its columns' values (in the file's order). */
type RowMapper = (values: readonly ValueAt[], at: number) => MappedRow;

/**
 * The row mapper for a header, generated as CSV's is (row-mapper.ts): every key a constant, a text
 * or a finite number taken without a call where the column takes it as it is; an attribute of
 * `nulls` whose values are all null is sent as null, in the place of its first column.
 */
function compiledMapper(columns: CsvHeader['columns'], kinds: ColumnKind[], converts: Convert[], refusedRow: RefusedRow, nulls: readonly NullWhenEmpty[]): RowMapper {
  const nullAt = new Map(nulls.map((entry) => [entry.at, entry]));
  const body = columns.map((column, i) => {
    const entry = nullAt.get(i);
    const emptied = entry === undefined ? '' : `{ item[${JSON.stringify(entry.name)}] = null; (emptied ??= []).push(${JSON.stringify(entry.name)}); }`;
    const whenNull = entry === undefined ? '' : `  if (${entry.cells.map((cell) => `values[${cell}](at) == null`).join(' && ')}) ${emptied}\n`;
    // a list of separators alone holds no value: null where a null would be
    const leftOut = entry !== undefined && column.path.length === 1 ? ` else if (read === undefined) ${emptied}` : '';
    let target = 'item';
    for (const key of column.path.slice(0, -1)) target = `(${target}[${JSON.stringify(key)}] ??= {})`;
    const store = `${target}[${JSON.stringify(column.path[column.path.length - 1])}]`;
    const asIs =
      kinds[i] === 'plain'
        ? `typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && value - value === 0)`
        : kinds[i] === 'text'
          ? `typeof value === 'string'`
          : 'false';
    return (
      `${whenNull}  value = values[${column.index}](at);\n` +
      `  if (value !== null && value !== undefined) { read = ${asIs} ? value : convert${i}(value); ` +
      `if (read instanceof CellProblem) (refused ??= []).push([${i}, read]); else if (read !== undefined) ${store} = read;${leftOut} }`
    );
  });
  const source = [
    `'use strict';`,
    `const [${columns.map((_, i) => `convert${i}`).join(', ')}] = converts;`,
    `return function mapRow(values, at) {`,
    `  const item = {};`,
    `  let value, read, refused, emptied;`,
    ...body,
    `  return refused === undefined && emptied === undefined ? { item } : refusedRow(item, refused, emptied);`,
    `};`,
  ].join('\n');
  return new Function('converts', 'CellProblem', 'refusedRow', source)(converts, CellProblem, refusedRow) as RowMapper;
}

/** What compiledMapper's function does, as a loop: for a header too wide to compile. */
function loopMapper(columns: CsvHeader['columns'], converts: Convert[], refusedRow: RefusedRow, nulls: readonly NullWhenEmpty[]): RowMapper {
  const nullAt = new Map(nulls.map((entry) => [entry.at, entry]));
  return (values, at) => {
    const item: Record<string, unknown> = {};
    let refused: Array<[number, CellProblem]> | undefined;
    let emptied: string[] | undefined;
    const setNull = (name: string): void => {
      item[name] = null;
      (emptied ??= []).push(name);
    };
    for (let i = 0; i < columns.length; i += 1) {
      const entry = nullAt.get(i);
      if (entry !== undefined && entry.cells.every((cell) => values[cell](at) == null)) setNull(entry.name);
      const value = values[columns[i].index](at);
      if (value === null || value === undefined) continue;
      const read = converts[i](value);
      if (read instanceof CellProblem) (refused ??= []).push([i, read]);
      else if (read === undefined) {
        if (entry !== undefined && columns[i].path.length === 1) setNull(entry.name);
      } else {
        const { path } = columns[i];
        let target = item;
        for (let depth = 0; depth < path.length - 1; depth += 1) target = (target[path[depth]] ??= {}) as Record<string, unknown>;
        target[path[path.length - 1]] = read;
      }
    }
    return refused === undefined && emptied === undefined ? { item } : refusedRow(item, refused, emptied);
  };
}

/** The item of the row `at` of a batch, from its columns' values (in the file's order). */
export function mapParquetRow(header: ParquetHeader, values: readonly ValueAt[], at: number): MappedRow {
  return header.mapRow(values, at);
}

/** A value as the rejects file shows it: JSON as near the value as can be (a number too long for one, as its text). */
function shownValue(value: unknown): unknown {
  if (typeof value === 'bigint') return String(value);
  if (value instanceof Decimal) return numberTextProblem(value.text) === undefined ? Number(value.text) : value.text;
  if (value instanceof LocalTime) return isoString(value.wallMs).slice(0, -1); // the wall-clock time, without Z
  if (value instanceof NotText || value instanceof Unsupported) return null;
  if (value instanceof TimeOutOfRange) return value.text;
  if (Array.isArray(value)) return value.map(shownValue);
  if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, shownValue(inner)]));
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
  return value;
}

/** A row as the rejects file shows it: each column's value under its header (after --map); nulls left out. */
export function parquetRowObject(header: ParquetHeader, values: readonly ValueAt[], at: number): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  header.csv.keys.forEach((key, i) => {
    const value = key === undefined ? undefined : values[i](at);
    if (key !== undefined && value !== null && value !== undefined) row[key] = shownValue(value);
  });
  return row;
}

/**
 * At least the UTF-8 bytes of the item's JSON, without building it (see jsonBytesBound): a text
 * value grows at most six times, any other single value to at most 32 bytes; a nested one is
 * measured (Infinity).
 */
export function parquetBytesBound(header: ParquetHeader, values: readonly ValueAt[], at: number): number {
  let bytes = header.csv.fixedBytes;
  for (const valueAt of values) {
    const value = valueAt(at);
    if (typeof value === 'string') bytes += 6 * value.length;
    else if (value instanceof Decimal) bytes += 6 * value.text.length;
    else if (typeof value === 'object' && value !== null && !(value instanceof LocalTime)) return Infinity;
    else bytes += 32;
  }
  return bytes;
}

/**
 * Where a Parquet row's item came from; its row for the rejects file is read from its batch again
 * only when asked for (the batch lives as long as its rows' origins).
 */
export class ParquetRowOrigin implements ItemOrigin {
  constructor(
    readonly file: string,
    readonly line: number,
    readonly header: ParquetHeader,
    readonly values: readonly ValueAt[],
    readonly at: number,
  ) {}

  get row(): Record<string, unknown> {
    return parquetRowObject(this.header, this.values, this.at);
  }

  toJSON(): ItemOrigin {
    return { file: this.file, line: this.line, row: this.row };
  }
}
