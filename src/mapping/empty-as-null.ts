// --empty-as-null: a file that is the whole truth about its users (a nightly export) clears what it
// no longer holds. An empty cell of an attributes row sends null for its attribute, which removes it
// from the profile; a nested attribute is sent as null when all of its dotted columns are empty. The
// cells that name the user, the control fields, push tokens, subscription groups and operations that
// add (`:inc`, `:add`, `:remove`, `visits.inc`) are never sent as null: for them an empty cell means
// "nothing to do", not "nothing there". Events and purchases are never cleared.
import { CONTROL_FIELDS, IDENTIFIER_FIELDS } from '../model/fields.js';
import type { ArrayName } from '../model/types.js';
import type { Annotation } from './cells.js';
import type { NullWhenEmpty } from './row-mapper.js';

/** Attributes an empty cell never clears: a null would remove what names the user, or is not a value of the field. */
const NEVER_NULL: ReadonlySet<string> = new Set([
  ...IDENTIFIER_FIELDS,
  ...CONTROL_FIELDS,
  'user_alias',
  'push_tokens',
  'subscription_groups',
  // the marks of a rejected row of the wrong width (csv-rows.ts), which are no attributes
  '_extra_cells',
  '_missing_columns',
]);
/** Annotations and dotted names of operations: an empty cell is no operation. */
const OPERATIONS: ReadonlySet<string> = new Set(['inc', 'add', 'remove', '$add', '$remove', '$update']);

/** The note for a CSV rejects file read back with --empty-as-null: its rows hold only some of their cells. */
export const EMPTY_AS_NULL_FED_BACK =
  '--empty-as-null is not applied to a rejects file read back: its rows hold only the cells their own file had (a dropped field, only its cell), so an empty cell there says nothing';

/**
 * The attributes of an attributes header sent as null when their cells are all empty, each at the
 * place of its first column. `columns` are in the order of the row's cells.
 */
export function nullsWhenEmpty(
  kind: ArrayName,
  columns: ReadonlyArray<{ index: number; path: readonly string[]; annotation?: Annotation }>,
): NullWhenEmpty[] {
  if (kind !== 'attributes') return [];
  const groups = new Map<string, { at: number; cells: number[]; clears: boolean }>();
  columns.forEach(({ index, path, annotation }, at) => {
    const name = path[0];
    let group = groups.get(name);
    if (group === undefined) groups.set(name, (group = { at, cells: [], clears: !NEVER_NULL.has(name) && name !== '' }));
    group.cells.push(index);
    if (annotation !== undefined && OPERATIONS.has(annotation)) group.clears = false;
    if (path.length > 1 && OPERATIONS.has(path[path.length - 1])) group.clears = false;
  });
  return [...groups].filter(([, group]) => group.clears).map(([name, { at, cells }]) => ({ name, at, cells }));
}
