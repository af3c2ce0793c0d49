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

export interface RowMapping {
  item: Record<string, unknown>;
  /** Cells their reader refused, as [position in the columns list, problem]; left out of the item. */
  refused?: Array<[number, CellProblem]>;
}

export type RowMapper = (cells: readonly string[]) => RowMapping;

/** Past this many columns, rows are mapped by loopRowMapper (V8 keeps at most 1,020 fast properties). */
export const MAX_COMPILED_COLUMNS = 1000;

/** The mapper for these columns: compiled, or a plain loop for a very wide header. */
export function rowMapper(columns: readonly RowColumn[]): RowMapper {
  return columns.length > MAX_COMPILED_COLUMNS ? loopRowMapper(columns) : compileRowMapper(columns);
}

/** Empty cells leave their field out; `null` removes it; anything else goes through the reader. */
export function compileRowMapper(columns: readonly RowColumn[]): RowMapper {
  const body = columns.map((column, i) => {
    let target = 'item';
    for (const key of column.path.slice(0, -1)) target = `(${target}[${JSON.stringify(key)}] ??= {})`;
    const store = `${target}[${JSON.stringify(column.path[column.path.length - 1])}]`;
    const read =
      column.read === readText
        ? `${store} = text === 'null' ? null : text;`
        : `{ value = text === 'null' ? null : read${i}(text); if (value instanceof CellProblem) (refused ??= []).push([${i}, value]); else ${MAY_LEAVE_OUT.has(column.read) ? 'if (value !== undefined) ' : ''}${store} = value; }`;
    return `  text = cells[${column.index}];\n  if (text !== undefined && text !== '') ${read}`;
  });
  const source = [
    `'use strict';`,
    `const [${columns.map((_, i) => `read${i}`).join(', ')}] = readers;`,
    `return function mapRow(cells) {`,
    `  const item = {};`,
    `  let text, value, refused;`,
    ...body,
    `  return refused === undefined ? { item } : { item, refused };`,
    `};`,
  ].join('\n');
  const factory = new Function('readers', 'CellProblem', source) as (readers: CellReader[], problem: typeof CellProblem) => RowMapper;
  return factory(
    columns.map((column) => column.read),
    CellProblem,
  );
}

/** What compileRowMapper's function does, as a loop over the columns. */
export function loopRowMapper(columns: readonly RowColumn[]): RowMapper {
  const plain = columns.map((column) => column.read === readText);
  return (cells) => {
    const item: Record<string, unknown> = {};
    let refused: Array<[number, CellProblem]> | undefined;
    for (let i = 0; i < columns.length; i += 1) {
      const { index, path, read } = columns[i];
      const text = cells[index];
      if (text === undefined || text === '') continue;
      const value = text === 'null' ? null : plain[i] ? text : read(text);
      if (value instanceof CellProblem) {
        (refused ??= []).push([i, value]);
        continue;
      }
      if (value === undefined) continue;
      let target = item;
      for (let depth = 0; depth < path.length - 1; depth += 1) target = (target[path[depth]] ??= {}) as Record<string, unknown>;
      target[path[path.length - 1]] = value;
    }
    return refused === undefined ? { item } : { item, refused };
  };
}
