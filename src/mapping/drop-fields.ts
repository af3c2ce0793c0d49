// --drop-invalid-fields: an attributes row whose only problems are fields other than the one naming
// its user is sent without them, and each field becomes a record of its own for the rejects file,
// holding the user's identifier and the field, so that once fixed it can be read back like any row.
import { CONTROL_FIELDS } from '../model/fields.js';
import { identityOf } from '../model/identity.js';
import { itemProblems } from '../model/validate-item.js';
import { isAnnotation } from './cells.js';

export interface DroppedField {
  /** The top-level field, as problems name it. */
  field: string;
  errors: string[];
}

/** Fields a row is never sent without: whose user it is and how it applies. */
const KEPT = new Set(['external_id', 'user_alias', 'service_id', ...CONTROL_FIELDS]);

/** The top-level field a problem names: `phone: ...`, `address.city: ...`, `zip (column "Zip"): ...`. */
export function problemField(problem: string): string {
  const end = problem.search(/[:.[ ]/);
  return end === -1 ? problem : problem.slice(0, end);
}

/**
 * The item without the fields its problems name, and those fields with their problems; undefined
 * when the row cannot go without them: a problem names no field of the row, or names the identifier
 * its user is found by, or the item would still be invalid, or would set nothing.
 */
export function withoutInvalidFields(
  item: Record<string, unknown>,
  problems: readonly string[],
  failed: readonly string[] = [],
): { item: Record<string, unknown>; dropped: DroppedField[] } | undefined {
  const by = identityOf(item, 'attributes').by;
  const failedTops = new Set(failed.map((field) => field.split('.')[0]));
  const dropped = new Map<string, string[]>();
  for (const problem of problems) {
    const field = problemField(problem);
    if (KEPT.has(field) || field === by || !(Object.hasOwn(item, field) || failedTops.has(field))) return undefined;
    const list = dropped.get(field);
    if (list === undefined) dropped.set(field, [problem]);
    else list.push(problem);
  }
  const rest: Record<string, unknown> = {};
  let sets = false;
  for (const key of Object.keys(item)) {
    if (dropped.has(key)) continue;
    rest[key] = item[key];
    if (key !== by && !CONTROL_FIELDS.has(key)) sets = true;
  }
  if (!sets || itemProblems('attributes', rest).length > 0) return undefined;
  return { item: rest, dropped: [...dropped].map(([field, errors]) => ({ field, errors })) };
}

/** The field a key of a row fills: `phone`, `tags:array` -> `tags`, `address.city` -> `address`. */
function keyField(key: string): string {
  const colon = key.lastIndexOf(':');
  const name = colon > 0 && isAnnotation(key.slice(colon + 1)) ? key.slice(0, colon) : key;
  return name.trim().split('.')[0];
}

/**
 * The part of a row a dropped field's record holds: the cells (or fields) that name the user and
 * those of the field, and the first of the latter as its column and value.
 */
export function droppedFieldRow(row: unknown, item: Record<string, unknown>, field: string): { row: unknown; column: string; value: unknown } {
  if (typeof row !== 'object' || row === null || Array.isArray(row)) return { row, column: field, value: undefined };
  const by = identityOf(item, 'attributes').by;
  const part: Record<string, unknown> = {};
  let column: string | undefined;
  for (const [key, value] of Object.entries(row)) {
    const filled = keyField(key);
    if (filled === field) column ??= key;
    if (filled === field || filled === by) part[key] = value;
  }
  return { row: part, column: column ?? field, value: column === undefined ? undefined : (row as Record<string, unknown>)[column] };
}
