// The function that turns one CSV row's cells into an item, built once per header. It is generated
// source rather than a loop over the columns: with every key a constant and every reader called
// from a site of its own, V8 keeps one shape for the items and inlines the readers, which maps a
// row two to three times faster, and the dry run must stay within 1.5 times csv-parse alone. Keys
// enter the source only as JSON string literals, which cannot end the literal they are in. A header
// of more columns than an object keeps fast properties for gets a plain loop instead: its items are
// dictionaries whatever builds them, and the generated code of 20,000 columns took 20 MB.
import { CellProblem, MAY_LEAVE_OUT, readText, type CellReader } from './cells.js';

export interface RowColumn {
  /** Position of the cell in the row. */
  index: number;
  path: readonly string[];
  read: CellReader;
}

/**
 * An attribute sent as null when its cells are all empty (--empty-as-null): a column's field, or a
 * nested attribute filled by several dotted columns. Its null takes the place of its first column.
 */
export interface NullWhenEmpty {
  /** The attribute (a top-level key of the item). */
  name: string;
  /** Where in the columns list its first column is. */
  at: number;
  /** The positions in the row of all its cells. */
  cells: readonly number[];
}

export interface RowMapping {
  item: Record<string, unknown>;
  /** Cells their reader refused, as [position in the columns list, problem]; left out of the item. */
  refused?: Array<[number, CellProblem]>;
  /** The attributes sent as null because their cells were empty (--empty-as-null), not because a cell said null. */
  emptied?: string[];
}

export type RowMapper = (cells: readonly string[]) => RowMapping;

/** Past this many columns, rows are mapped by loopRowMapper (V8 keeps at most 1,020 fast properties). */
export const MAX_COMPILED_COLUMNS = 1000;

/** The mapper for these columns: compiled, or a plain loop for a very wide header. */
export function rowMapper(columns: readonly RowColumn[], nulls: readonly NullWhenEmpty[] = []): RowMapper {
  return columns.length > MAX_COMPILED_COLUMNS ? loopRowMapper(columns, nulls) : compileRowMapper(columns, nulls);
}

/** A cell that holds nothing: empty, or missing from a short row. */
const isEmpty = (text: string | undefined): boolean => text === undefined || text === '';

/**
 * Empty cells leave their field out (or, for an attribute in `nulls`, send it as null); `null`
 * removes it; anything else goes through the reader.
 */
export function compileRowMapper(columns: readonly RowColumn[], nulls: readonly NullWhenEmpty[] = []): RowMapper {
  const nullAt = new Map(nulls.map((entry) => [entry.at, entry]));
  const body = columns.map((column, i) => {
    let target = 'item';
    for (const key of column.path.slice(0, -1)) target = `(${target}[${JSON.stringify(key)}] ??= {})`;
    const store = `${target}[${JSON.stringify(column.path[column.path.length - 1])}]`;
    const entry = nullAt.get(i);
    const name = entry === undefined ? '' : JSON.stringify(entry.name);
    const emptied = entry === undefined ? '' : `{ item[${name}] = null; (emptied ??= []).push(${name}); }`;
    // a list of separators alone holds no value: left out, or null where an empty cell would be
    const leftOut = !MAY_LEAVE_OUT.has(column.read) ? '' : entry !== undefined && column.path.length === 1 ? `if (value === undefined) ${emptied} else ` : 'if (value !== undefined) ';
    const read =
      column.read === readText
        ? `${store} = text === 'null' ? null : text;`
        : `{ value = text === 'null' ? null : read${i}(text); if (value instanceof CellProblem) (refused ??= []).push([${i}, value]); else ${leftOut}${store} = value; }`;
    const whenEmpty = entry === undefined ? '' : `  if (${entry.cells.map((cell) => `(cells[${cell}] === undefined || cells[${cell}] === '')`).join(' && ')}) ${emptied}\n`;
    return `${whenEmpty}  text = cells[${column.index}];\n  if (text !== undefined && text !== '') ${read}`;
  });
  const source = [
    `'use strict';`,
    `const [${columns.map((_, i) => `read${i}`).join(', ')}] = readers;`,
    `return function mapRow(cells) {`,
    `  const item = {};`,
    `  let text, value, refused, emptied;`,
    ...body,
    `  return refused === undefined && emptied === undefined ? { item } : emptied === undefined ? { item, refused } : { item, refused, emptied };`,
    `};`,
  ].join('\n');
  const factory = new Function('readers', 'CellProblem', source) as (readers: CellReader[], problem: typeof CellProblem) => RowMapper;
  return factory(
    columns.map((column) => column.read),
    CellProblem,
  );
}

/** What compileRowMapper's function does, as a loop over the columns. */
export function loopRowMapper(columns: readonly RowColumn[], nulls: readonly NullWhenEmpty[] = []): RowMapper {
  const plain = columns.map((column) => column.read === readText);
  const nullAt = new Map(nulls.map((entry) => [entry.at, entry]));
  return (cells) => {
    const item: Record<string, unknown> = {};
    let refused: Array<[number, CellProblem]> | undefined;
    let emptied: string[] | undefined;
    const setNull = (name: string): void => {
      item[name] = null;
      (emptied ??= []).push(name);
    };
    for (let i = 0; i < columns.length; i += 1) {
      const { index, path, read } = columns[i];
      const entry = nullAt.get(i);
      if (entry !== undefined && entry.cells.every((cell) => isEmpty(cells[cell]))) setNull(entry.name);
      const text = cells[index];
      if (text === undefined || text === '') continue;
      const value = text === 'null' ? null : plain[i] ? text : read(text);
      if (value instanceof CellProblem) {
        (refused ??= []).push([i, value]);
        continue;
      }
      if (value === undefined) {
        if (entry !== undefined && path.length === 1) setNull(entry.name);
        continue;
      }
      let target = item;
      for (let depth = 0; depth < path.length - 1; depth += 1) target = (target[path[depth]] ??= {}) as Record<string, unknown>;
      target[path[path.length - 1]] = value;
    }
    if (emptied !== undefined) return { item, refused, emptied };
    return refused === undefined ? { item } : { item, refused };
  };
}
