// What a person should hear about a CSV file's columns before trusting the upload: a column whose
// name is close to an identifier or a standard field, and a column whose guessed types are mixed
// (a zip column of numbers and texts leaves profiles holding both).
import { IDENTIFIER_FIELDS, isCustomAttributeName } from '../model/fields.js';
import type { ArrayName } from '../model/types.js';
import { plainDecimalDot, type CellReader } from './cells.js';
import { likelyField, mapEntry } from './suggest.js';
import { readTimeText } from './times.js';


export interface HeaderAdvice {
  /** For a header that can be used: each column that likely means another field. */
  notes: string[];
  /** For a header that names no user: the --map entries that would make it name one. */
  fixes: string[];
}

/** The columns (by their name in the file and the field they fill) whose name likely means another field. */
export function identifierNotes(kind: ArrayName, columns: ReadonlyArray<{ source: string; field: string }>, tops: ReadonlySet<string>): HeaderAdvice {
  const notes: string[] = [];
  /** For each identifier a column likely means, the --map entry that makes it name the user. */
  const fixes = new Map<string, string>();
  const namedBy = [...IDENTIFIER_FIELDS].find((name) => tops.has(name));
  /** The first column taken for each field: one column can fill a field, so a second is told to map one of them. */
  const firstLike = new Map<string, string>();
  for (const { source, field } of columns) {
    if (field.includes('.') || !isCustomAttributeName(field)) continue;
    const likely = likelyField(field);
    if (likely === undefined || tops.has(likely)) continue;
    const identifier = IDENTIFIER_FIELDS.has(likely);
    if (kind !== 'attributes' && !identifier) continue;
    const entry = mapEntry(source, likely);
    const first = firstLike.get(likely);
    if (first === undefined) firstLike.set(likely, source);
    const becomes = kind === 'attributes' ? `becomes the custom attribute "${field}"` : `is not a field of ${kind}`;
    const users = identifier && namedBy !== undefined ? `, and the rows' users are found by ${namedBy}` : '';
    if (first !== undefined) {
      // --map cannot send two columns to one field
      notes.push(`column "${source}" ${becomes}${users}, but looks like ${likely} as column "${first}" does; map only one of them to ${likely}`);
      continue;
    }
    if (identifier) fixes.set(likely, `column "${source}" looks like ${likely}: put ${entry} in a --map file and give --map FILE`);
    notes.push(`column "${source}" ${becomes}${users}, but looks like ${likely}; to read it as ${likely}, put ${entry} in a --map file`);
  }
  // a header that names no user: one column per field, the others named beside it
  for (const [likely, first] of firstLike) {
    const others = columns.filter(({ source, field }) => source !== first && !field.includes('.') && isCustomAttributeName(field) && likelyField(field) === likely);
    const fix = fixes.get(likely);
    if (others.length > 0 && fix !== undefined) fixes.set(likely, `${fix} (or map ${others.map(({ source }) => `"${source}"`).join(' or ')} instead: one column only)`);
  }
  // the identifier that names a user best first: an id before an email, an email before a phone
  return { notes, fixes: [...IDENTIFIER_FIELDS].flatMap((name) => fixes.get(name) ?? []) };
}

/** How many cells of one column read by inference became numbers, booleans and texts. */
export interface TypeCounts {
  column: string;
  field: string;
  /**
   * [numbers, booleans, texts, what the cells rule out (RULED_OUT_BOOLEAN, RULED_OUT_TIME,
   * RULED_OUT_LIST), texts holding the list separator (`;` when none is given), texts holding `|`]
   */
  counts: Float64Array;
  /** --array-separator, when given: the one separator a list is looked for with. */
  separator?: string;
}

/** The slots of TypeCounts.counts. */
export const TYPE_COUNT_SLOTS = 6;

/**
 * Set in counts[3] once a cell is no boolean word (yes, no, 1, 0, ...); once one reads as no time;
 * once one is no list of short items. A column stops looking once it is none of them.
 */
const RULED_OUT_BOOLEAN = 1;
const RULED_OUT_TIME = 2;
const RULED_OUT_LIST = 4;
/** Set once a text is no word a database writes for no value (NULL_WORDS). */
const RULED_OUT_NULL = 8;
const RULED_OUT_ALL = 15;
const BOOLEAN_WORDS: ReadonlySet<string> = new Set(['true', 'false', 'yes', 'no', 'y', 'n', '1', '0']);
/** What exports write for no value (SQL's NULL, PostgreSQL's and MySQL's \N, Python's None and NaN): read as text, as any word. */
const NULL_WORDS: ReadonlySet<string> = new Set(['null', '\\n', 'none', 'nan', 'nil']);
/** The longest item of a list (a tag, a category): a cell of longer text without a separator is prose, not a list. */
const MAX_LIST_ITEM = 64;
/** A column none of whose first texts holds a separator is taken for no list. */
const LIST_SAMPLE = 1000;

/** ruleOut for a cell read as a number: 0 and 1 are booleans, and whole numbers of 10 or 13 digits epoch times. */
function ruleOutNumber(counts: Float64Array, text: string): void {
  let out = counts[3];
  if (text !== '0' && text !== '1') out |= RULED_OUT_BOOLEAN;
  if ((text.length !== 10 && text.length !== 13) || text.charCodeAt(0) === 45 || text.includes('.')) out |= RULED_OUT_TIME;
  counts[3] = out;
}

/**
 * Notes in counts[3] whether the cell could be read by :boolean, by :time and as a list, and counts
 * the texts holding a separator (the one given, else `;` and `|`).
 */
function ruleOut(counts: Float64Array, text: string, separator: string | undefined): void {
  let out = counts[3];
  if ((out & RULED_OUT_BOOLEAN) === 0 && !BOOLEAN_WORDS.has(text.trim().toLowerCase())) out |= RULED_OUT_BOOLEAN;
  if ((out & RULED_OUT_TIME) === 0 && readTimeText(text, {}) === undefined) out |= RULED_OUT_TIME;
  if ((out & RULED_OUT_NULL) === 0 && !NULL_WORDS.has(text.trim().toLowerCase())) out |= RULED_OUT_NULL;
  if ((out & RULED_OUT_LIST) === 0) {
    const first = text.includes(separator ?? ';');
    const pipe = separator === undefined && text.includes('|');
    if (first) counts[4] += 1;
    if (pipe) counts[5] += 1;
    if (text.length > MAX_LIST_ITEM && ((!first && !pipe) || !shortItems(text, separator))) out |= RULED_OUT_LIST;
    // no tag or category holds a line break: a cell that does is a note or an address
    else if (text.includes('\n') || text.includes('\r')) out |= RULED_OUT_LIST;
    // a column of names or codes is no list: it stops being looked at, as every cell of a file comes here
    else if (counts[2] >= LIST_SAMPLE && counts[4] + counts[5] === 0) out |= RULED_OUT_LIST;
  }
  counts[3] = out;
}

/**
 * Whether every part of the text between separators (the one given, else `;` and `|`) is at most
 * MAX_LIST_ITEM long, spaces around it aside. It looks from separator to separator, making no
 * strings but for a long part: every cell of a column of lists comes here.
 */
function shortItems(text: string, separator: string | undefined): boolean {
  // the next `;` and `|` at or after where the last search began (-1: none left), each searched again only once passed
  let semicolon = -2;
  let pipe = -2;
  const next = (from: number): number => {
    if (separator !== undefined) return text.indexOf(separator, from);
    if (semicolon !== -1 && semicolon < from) semicolon = text.indexOf(';', from);
    if (pipe !== -1 && pipe < from) pipe = text.indexOf('|', from);
    return semicolon === -1 ? pipe : pipe === -1 ? semicolon : Math.min(semicolon, pipe);
  };
  const step = separator?.length ?? 1;
  for (let start = 0; ; ) {
    const found = next(start);
    const end = found === -1 ? text.length : found;
    if (end - start > MAX_LIST_ITEM && text.slice(start, end).trim().length > MAX_LIST_ITEM) return false;
    if (found === -1) return true;
    start = found + step;
  }
}

/**
 * readInferred, counting the type of each value in `counts` ([numbers, booleans, texts]). Its rule
 * is written out again here so the count costs no second look at the value: every inferred cell of
 * a file comes through it.
 */
export function typeCounter(counts: Float64Array, separator?: string): CellReader {
  return (text) => {
    const c = text.charCodeAt(0);
    if ((c >= 48 && c <= 57) || c === 45) {
      const dot = plainDecimalDot(text);
      if (dot !== -1) {
        const n = Number(text);
        if (dot < text.length || Number.isSafeInteger(n)) {
          counts[0] += 1;
          // a number is a list of one item: it rules out nothing of a list
          if ((counts[3] & (RULED_OUT_BOOLEAN | RULED_OUT_TIME)) !== (RULED_OUT_BOOLEAN | RULED_OUT_TIME)) ruleOutNumber(counts, text);
          return n;
        }
      }
    } else if (text === 'true' || text === 'false') {
      counts[1] += 1;
      counts[3] |= RULED_OUT_TIME | RULED_OUT_LIST;
      return text === 'true';
    }
    counts[2] += 1;
    if (counts[3] !== RULED_OUT_ALL) ruleOut(counts, text, separator);
    return text;
  };
}

const TYPE_NAMES = [
  ['number', 'numbers'],
  ['boolean', 'booleans'],
  ['text', 'texts'],
] as const;

/** 1427 -> `1,427`, without loading the runtime's number formats (toLocaleString costs megabytes). */
export const grouped = (n: number): string => String(n).replace(/\B(?=(\d{3})+$)/g, ',');

/** What a column of mixed types would hold, by the kind of its rows. */
const HOLDERS: Readonly<Record<ArrayName, string>> = {
  attributes: 'profiles will hold mixed types',
  events: 'its events will carry the property in mixed types',
  purchases: 'its purchases will carry the property in mixed types',
};

/** What a column of booleans or lists read as text would hold, by the kind of its rows. */
const TEXT_HOLDERS: Readonly<Record<ArrayName, string>> = {
  attributes: 'profiles will hold it as text',
  events: 'its events will carry the property as text',
  purchases: 'its purchases will carry the property as text',
};

/** `{"Tags": "tags:array"} in a --map file, or the header "tags:array"` */
const typeIt = (column: string, typed: string): string => `type it: ${mapEntry(column, typed)} in a --map file, or the header "${typed}"`;

/**
 * What a person should know of the types guessed for each column: a column whose cells became more
 * than one type (with the counts and the annotation to add: :boolean when every cell is a yes/no
 * word, :time when every cell reads as a time, else :string, or :boolean beside it for true/false
 * among texts); a column of texts that are all yes/no words (:boolean); and a column of texts that
 * are lists (:array, and the --array-separator that splits them).
 */
export function typeNotes(typeCounts: readonly TypeCounts[], kind: ArrayName = 'attributes'): string[] {
  const notes: string[] = [];
  for (const { column, field, counts, separator } of typeCounts) {
    const out = counts[3] ?? RULED_OUT_ALL;
    const list = listNote(counts, separator);
    if (list !== undefined) {
      notes.push(`column "${column}" holds lists (${list.holding}), so ${TEXT_HOLDERS[kind]}; ${typeIt(column, `${field}:array`)}${list.flag}`);
      continue;
    }
    const kinds = [0, 1, 2].filter((i) => counts[i] > 0);
    // texts that all say "no value" (NULL, \N): typing the column would not help, exporting them empty does
    if (counts[2] > 0 && (out & RULED_OUT_NULL) === 0) {
      const cells = counts[2] === 1 ? '1 cell reads' : `${grouped(counts[2])} cells read`;
      notes.push(
        `column "${column}": ${cells} NULL, \\N, None or NaN, sent as that text (not as no value), so ${kinds.length > 1 ? HOLDERS[kind] : TEXT_HOLDERS[kind]}; if they mean no value, export them as empty cells (sending nothing, or null with --empty-as-null) or as null (removing the attribute)`,
      );
      continue;
    }
    if (kinds.length === 1 && kinds[0] === 2 && (out & RULED_OUT_BOOLEAN) === 0) {
      const cells = counts[2] === 1 ? 'its one cell is a yes/no word' : `its ${grouped(counts[2])} cells are all yes/no words`;
      notes.push(`column "${column}" was guessed as text, but ${cells} (true/false, yes/no, y/n), so ${TEXT_HOLDERS[kind]}; ${typeIt(column, `${field}:boolean`)}`);
      continue;
    }
    if (kinds.length < 2) continue;
    const parts = kinds.map((i) => `${grouped(counts[i])} ${TYPE_NAMES[i][counts[i] === 1 ? 0 : 1]}`);
    const booleans = (out & RULED_OUT_BOOLEAN) === 0;
    const times = (out & RULED_OUT_TIME) === 0;
    const annotation = booleans ? 'boolean' : times ? 'time' : counts[1] > 0 && counts[0] === 0 ? 'boolean' : 'string';
    const other = booleans
      ? ' (it reads yes/no/y/n/1/0 as well as true/false)'
      : times
        ? ' (it reads dates, times and epoch seconds or milliseconds; --timezone and --date-order say how)'
        : annotation === 'boolean'
          ? ' (it reads yes/no/y/n/1/0 too), or :string to keep the texts'
          : '';
    notes.push(`column "${column}" was guessed as ${parts.join(' and ')}, so ${HOLDERS[kind]}; ${typeIt(column, `${field}:${annotation}`)}${other}`);
  }
  return notes;
}

/**
 * For a column of lists (no boolean among its cells, every text a list of short items, some holding
 * a separator): how many hold which separator, and the flag that splits them when none was given.
 */
function listNote(counts: Float64Array, separator: string | undefined): { holding: string; flag: string } | undefined {
  if (counts.length < TYPE_COUNT_SLOTS || (counts[3] & RULED_OUT_LIST) !== 0 || counts[1] > 0) return undefined;
  const [first, pipe] = [counts[4], counts[5]];
  if (first === 0 && pipe === 0) return undefined;
  const found = separator ?? (pipe > first ? '|' : ';');
  const holders = found === '|' && separator === undefined ? pipe : first;
  const holding = `${holders === 1 ? 'a cell holds' : `${grouped(holders)} cells hold`} ${JSON.stringify(found)}`;
  return { holding, flag: separator === undefined ? `, and give --array-separator '${found}'` : '' };
}
