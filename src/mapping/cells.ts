// Turning one CSV cell's text into a value: by the column's annotation, or by the safe inference of
// decisions.md "Reading files (uploader)", which never turns a zip code or a long ID into a number.
import { inexactNumberIn, numberTextProblem } from '../model/exact-numbers.js';
import { isIsoTime } from '../model/time.js';

/** What a cell reader returns when the text does not fit the column; the message follows `field: `. */
export class CellProblem {
  constructor(readonly message: string) {}
}

export type CellReader = (text: string) => unknown;

/**
 * Readers that may return undefined for a cell that holds nothing after all (a list of separators
 * alone): its field is left out, as for an empty cell. The row mapper checks only these readers' values.
 */
export const MAY_LEAVE_OUT: WeakSet<CellReader> = new WeakSet();

export const COLUMN_TYPES = ['string', 'number', 'integer', 'boolean', 'time', 'json', 'array'] as const;
export const COLUMN_OPERATIONS = ['inc', 'add', 'remove'] as const;
export type ColumnType = (typeof COLUMN_TYPES)[number];
export type ColumnOperation = (typeof COLUMN_OPERATIONS)[number];
export type Annotation = ColumnType | ColumnOperation;

export function isAnnotation(value: string): value is Annotation {
  return (COLUMN_TYPES as readonly string[]).includes(value) || (COLUMN_OPERATIONS as readonly string[]).includes(value);
}

export function shown(text: string): string {
  return JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}...` : text);
}

// decisions.md "Reading files (uploader)": the exact rule for an unannotated cell
export const PLAIN_DECIMAL = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?$/;

export const readText: CellReader = (text) => text;

/**
 * Where the fraction of a plain decimal starts (the index of its dot, or the length for a whole
 * number), or -1 when the text is not one. The same verdict as PLAIN_DECIMAL, without running a
 * regular expression for every cell of a file.
 */
export function plainDecimalDot(text: string): number {
  const length = text.length;
  let i = text.charCodeAt(0) === 45 ? 1 : 0; // -
  const first = text.charCodeAt(i);
  if (first === 48) i += 1; // a lone 0
  else if (first >= 49 && first <= 57) {
    i += 1;
    while (i < length && isDigit(text.charCodeAt(i))) i += 1;
  } else return -1;
  if (i === length) return i;
  if (text.charCodeAt(i) !== 46 || i + 1 === length) return -1;
  const dot = i;
  for (i += 1; i < length; i += 1) if (!isDigit(text.charCodeAt(i))) return -1;
  return dot;
}

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

export const readInferred: CellReader = (text) => {
  if (text === 'true') return true;
  if (text === 'false') return false;
  const c = text.charCodeAt(0);
  if ((c >= 48 && c <= 57) || c === 45) {
    const dot = plainDecimalDot(text);
    if (dot !== -1) {
      const n = Number(text);
      if (dot < text.length || Number.isSafeInteger(n)) return n;
    }
  }
  return text;
};

const NUMBER = /^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$/;
const INTEGER = /^[+-]?[0-9]+$/;

export const readNumber: CellReader = (text) => {
  if (!NUMBER.test(text)) return new CellProblem(`must be a number (the column is typed number), got ${shown(text)}`);
  const n = Number(text);
  if (!Number.isFinite(n)) return new CellProblem(`is too large for a number, got ${shown(text)}`);
  if (INTEGER.test(text) && !Number.isSafeInteger(n)) {
    return new CellProblem(`is a whole number too large to be kept exactly; type the column string, got ${shown(text)}`);
  }
  // a decimal of more digits than a number holds, or one too small for it (the same rule as NDJSON)
  if (text.length >= 16 || /[eE]/.test(text)) {
    const problem = numberTextProblem(text.replace(/^\+/, ''), 'type the column string to keep it as written');
    if (problem !== undefined) return new CellProblem(problem);
  }
  return n;
};

function integerOf(text: string, typed: string): number | CellProblem {
  if (!INTEGER.test(text)) return new CellProblem(`must be a whole number (the column is typed ${typed}), got ${shown(text)}`);
  const n = Number(text);
  if (!Number.isSafeInteger(n)) return new CellProblem(`is a whole number too large to be kept exactly, got ${shown(text)}`);
  return n;
}

export const readInteger: CellReader = (text) => integerOf(text, 'integer');

export const readBoolean: CellReader = (text) => {
  switch (text.trim().toLowerCase()) {
    case 'true':
    case '1':
    case 'yes':
    case 'y':
      return true;
    case 'false':
    case '0':
    case 'no':
    case 'n':
      return false;
    default:
      return new CellProblem(`must be true or false (also yes, no, y, n, 1, 0; the column is typed boolean), got ${shown(text)}`);
  }
};

export function timeOf(text: string): string | CellProblem {
  return isIsoTime(text)
    ? text
    : new CellProblem(`must be an ISO 8601 time such as 2024-03-07T10:00:00Z (the column is typed time), got ${shown(text)}`);
}

export const readTime: CellReader = timeOf;

/** A time set as a custom attribute is sent as `{"$time": ...}` (decisions.md "Attributes"). */
export const readTimeAttribute: CellReader = (text) => {
  const time = timeOf(text);
  return time instanceof CellProblem ? time : { $time: time };
};

function jsonOf(text: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch (error) {
    return new CellProblem(`is not valid JSON (${(error as Error).message}), got ${shown(text)}`);
  }
  const inexact = inexactNumberIn(text);
  if (inexact === undefined) return value;
  return new CellProblem(inexact.path === '' ? inexact.message : `${inexact.path}: ${inexact.message}`);
}

export const readJson: CellReader = jsonOf;

export function arrayOf(text: string, typed: string): unknown[] | CellProblem {
  const value = text.trimStart().charCodeAt(0) === 91 /* [ */ ? jsonOf(text) : undefined;
  if (value instanceof CellProblem) return value;
  if (!Array.isArray(value)) {
    return new CellProblem(
      `must be a JSON array such as ["a","b"], or a list such as a;b with --array-separator ';' (the column is typed ${typed}), got ${shown(text)}`,
    );
  }
  return value;
}

export const readArray: CellReader = (text) => arrayOf(text, 'array');

export const readIncrement: CellReader = (text) => {
  const n = integerOf(text, 'inc');
  return n instanceof CellProblem ? n : { inc: n };
};

export const readAdd: CellReader = (text) => {
  const values = arrayOf(text, 'add');
  return values instanceof CellProblem ? values : { add: values };
};

export const readRemove: CellReader = (text) => {
  const values = arrayOf(text, 'remove');
  return values instanceof CellProblem ? values : { remove: values };
};

export const ANNOTATION_READERS: Readonly<Record<Annotation, CellReader>> = {
  string: readText,
  number: readNumber,
  integer: readInteger,
  boolean: readBoolean,
  time: readTime,
  json: readJson,
  array: readArray,
  inc: readIncrement,
  add: readAdd,
  remove: readRemove,
};
