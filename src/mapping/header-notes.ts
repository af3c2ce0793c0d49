// What a person should hear about a CSV file's columns before trusting the upload: a column whose
// name is close to an identifier or a standard field, and a column whose guessed types are mixed
// (a zip column of numbers and texts leaves profiles holding both).
import { IDENTIFIER_FIELDS, isCustomAttributeName } from '../model/fields.js';
import type { ArrayName } from '../model/types.js';
import { plainDecimalDot, type CellReader } from './cells.js';
import { likelyField, mapEntry } from './suggest.js';

const IDENTIFIER_ORDER = ['external_id', 'user_alias', 'service_id', 'email', 'phone'] as const;

export interface HeaderAdvice {
  /** For a header that can be used: each column that likely means another field. */
  notes: string[];
  /** For a header that names no user: the --map entries that would make it name one. */
  fixes: string[];
}

/** The columns (by their name in the file and the field they fill) whose name likely means another field. */
export function identifierNotes(kind: ArrayName, columns: ReadonlyArray<{ source: string; field: string }>, tops: ReadonlySet<string>): HeaderAdvice {
  const notes: string[] = [];
  const fixes: string[] = [];
  const namedBy = IDENTIFIER_ORDER.find((name) => tops.has(name));
  for (const { source, field } of columns) {
    if (field.includes('.') || !isCustomAttributeName(field)) continue;
    const likely = likelyField(field);
    if (likely === undefined || tops.has(likely)) continue;
    const identifier = IDENTIFIER_FIELDS.has(likely);
    if (kind !== 'attributes' && !identifier) continue;
    const entry = mapEntry(source, likely);
    if (identifier) fixes.push(`column "${source}" looks like ${likely}: put ${entry} in a --map file and give --map FILE`);
    const becomes = kind === 'attributes' ? `becomes the custom attribute "${field}"` : `is not a field of ${kind}`;
    const users = identifier && namedBy !== undefined ? `, and the rows' users are found by ${namedBy}` : '';
    notes.push(`column "${source}" ${becomes}${users}, but looks like ${likely}; to read it as ${likely}, put ${entry} in a --map file`);
  }
  return { notes, fixes };
}

/** How many cells of one column read by inference became numbers, booleans and texts. */
export interface TypeCounts {
  column: string;
  field: string;
  /** [numbers, booleans, texts] */
  counts: Float64Array;
}

/**
 * readInferred, counting the type of each value in `counts` ([numbers, booleans, texts]). Its rule
 * is written out again here so the count costs no second look at the value: every inferred cell of
 * a file comes through it.
 */
export function typeCounter(counts: Float64Array): CellReader {
  return (text) => {
    const c = text.charCodeAt(0);
    if ((c >= 48 && c <= 57) || c === 45) {
      const dot = plainDecimalDot(text);
      if (dot !== -1) {
        const n = Number(text);
        if (dot < text.length || Number.isSafeInteger(n)) {
          counts[0] += 1;
          return n;
        }
      }
    } else if (text === 'true' || text === 'false') {
      counts[1] += 1;
      return text === 'true';
    }
    counts[2] += 1;
    return text;
  };
}

const TYPE_NAMES = [
  ['number', 'numbers'],
  ['boolean', 'booleans'],
  ['text', 'texts'],
] as const;

/** 1427 -> `1,427`, without loading the runtime's number formats (toLocaleString costs megabytes). */
const grouped = (n: number): string => String(n).replace(/\B(?=(\d{3})+$)/g, ',');

/** A note for each column whose cells became more than one type, with the counts and the annotation to add. */
export function mixedTypeNotes(typeCounts: readonly TypeCounts[]): string[] {
  const notes: string[] = [];
  for (const { column, field, counts } of typeCounts) {
    const kinds = [0, 1, 2].filter((i) => counts[i] > 0);
    if (kinds.length < 2) continue;
    const parts = kinds.map((i) => `${grouped(counts[i])} ${TYPE_NAMES[i][counts[i] === 1 ? 0 : 1]}`);
    const annotation = counts[1] > 0 && counts[0] === 0 ? 'boolean' : 'string';
    const other = annotation === 'boolean' ? ' (it reads yes/no/y/n/1/0 too), or :string to keep the texts' : '';
    notes.push(
      `column "${column}" was guessed as ${parts.join(' and ')}, so profiles will hold mixed types; ` +
        `type it: ${mapEntry(column, `${field}:${annotation}`)} in a --map file, or the header "${field}:${annotation}"${other}`,
    );
  }
  return notes;
}
