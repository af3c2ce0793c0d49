// The --map file: renames and types columns without editing the input. A JSON object from a column
// as the file's header names it to the header to read it as (`"Zip": "zip:string"`), or to null to
// leave the column out.
import { nameFinder } from './suggest.js';

export type ColumnMap = ReadonlyMap<string, string | null>;

export type ColumnMapResult = { ok: true; map: ColumnMap } | { ok: false; problems: string[] };

export function validateColumnMap(json: unknown): ColumnMapResult {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    return { ok: false, problems: ['must be a JSON object from column name to field name (or null to leave the column out)'] };
  }
  const problems: string[] = [];
  const map = new Map<string, string | null>();
  for (const [column, target] of Object.entries(json)) {
    if (target === null || (typeof target === 'string' && target.length > 0)) map.set(column, target);
    else problems.push(`"${column}": must be a field name such as "zip:string", or null, got ${JSON.stringify(target)}`);
  }
  return problems.length === 0 ? { ok: true, map } : { ok: false, problems };
}

/**
 * The map's entry for a column as the header writes it: under its own name, else under the name
 * without the spaces around it, as a header name is read (`"Email "` takes the key `"Email"`).
 * Undefined when the map names it neither way; null when it leaves the column out.
 */
export function mapEntryOf(map: ColumnMap | undefined, column: string): string | null | undefined {
  if (map === undefined) return undefined;
  const own = map.get(column);
  return own !== undefined ? own : map.get(column.trim());
}

/** Files named in a message: the first few, and how many others (thousands of inputs are not each named). */
const NAMED_FILES = 3;
function someFiles(files: readonly string[]): string {
  const others = files.length - NAMED_FILES;
  return others <= 0 ? files.join(', ') : `${files.slice(0, NAMED_FILES).join(', ')} and ${others.toLocaleString('en-US')} other ${others === 1 ? 'file' : 'files'}`;
}

/**
 * Why each column a map names (its keys) is in no input's header, with the name it likely means: a map may be
 * meant for several files, so a column only some of them have is fine. Empty when every one is found.
 */
export function unmatchedColumnProblems(named: Iterable<string>, headers: ReadonlyArray<{ file: string; columns: readonly string[] }>): string[] {
  const all = new Set<string>();
  // (the files of one header share its names: each is added once)
  let last: readonly string[] | undefined;
  for (const { columns } of headers) {
    if (columns !== last) for (const name of columns) all.add(name);
    last = columns;
  }
  const trimmed = new Set([...all].map((name) => name.trim()));
  const problems: string[] = [];
  let closest: ((name: string) => string | undefined) | undefined;
  for (const column of named) {
    if (all.has(column) || trimmed.has(column)) continue;
    closest ??= nameFinder(all);
    const where = headers.length === 1 ? `of ${headers[0].file}` : `of any input (${someFiles(headers.map(({ file }) => file))})`;
    const likely = closest(column);
    const shown = [...all].slice(0, 20).map((name) => JSON.stringify(name));
    const has = headers.length === 1 ? 'the header has' : 'the headers have';
    const hint = likely !== undefined ? `did you mean ${JSON.stringify(likely)}?` : `${has} ${shown.join(', ')}${all.size > shown.length ? ', ...' : ''}`;
    problems.push(`${JSON.stringify(column)} is not a column ${where}; ${hint}`);
  }
  return problems;
}
