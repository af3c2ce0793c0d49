// The small checks every item rule is built from: what a value is, how long a text is, and how a
// value is described in a message.
import { MAX_STRING_LENGTH } from './fields.js';
import { isIsoTime } from './time.js';

export type Obj = Record<string, unknown>;

export function isPlainObject(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function isScalar(value: unknown): value is string | number | boolean {
  return typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value));
}

export function isNonEmptyString(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0;
}

/**
 * Whether a string has more than `max` characters. The spec's limits are in characters, so count code
 * points, not UTF-16 units: an emoji is one character, though JavaScript's length says 2.
 */
export function longerThan(value: string, max: number): boolean {
  if (value.length <= max) return false;
  let count = 0;
  for (const _ of value) {
    count += 1;
    if (count > max) return true;
  }
  return false;
}

export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return value.length > 40 ? `"${value.slice(0, 40)}..."` : JSON.stringify(value);
  if (typeof value === 'object') return 'an object';
  return String(value);
}

/** A name as a message shows it: an empty one as "", a long one shortened. */
export function shownName(name: string): string {
  if (name.length === 0) return '""';
  return name.length > 40 ? `${name.slice(0, 40)}...` : name;
}

export function checkText(field: string, value: unknown, problems: string[], required = true): void {
  if (value === undefined) {
    // (a CSV row's empty cell leaves its field out)
    if (required) problems.push(`${field}: missing; must be a non-empty string`);
    return;
  }
  if (!isNonEmptyString(value)) problems.push(`${field}: must be a non-empty string, got ${describe(value)}`);
  else if (longerThan(value, MAX_STRING_LENGTH)) problems.push(`${field}: must be at most ${MAX_STRING_LENGTH} characters`);
}

export function checkBoolean(field: string, value: unknown, problems: string[]): void {
  if (value !== undefined && typeof value !== 'boolean') problems.push(`${field}: must be true or false, got ${describe(value)}`);
}

/** Whether a value takes more than `max` bytes as JSON; the text is made only when its strings could. */
export function jsonLongerThan(value: unknown, max: number): boolean {
  // a cheap upper bound first: nearly every value is far below the limit
  let estimate = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0 && estimate <= max) {
    const node = stack.pop();
    if (typeof node === 'string') estimate += 6 * node.length + 3;
    else if (Array.isArray(node)) {
      estimate += 1 + node.length;
      for (const child of node) stack.push(child);
    } else if (isPlainObject(node)) {
      for (const key in node) {
        estimate += 6 * key.length + 4;
        stack.push(node[key]);
      }
      estimate += 2;
    } else estimate += 24;
  }
  if (estimate <= max) return false;
  return Buffer.byteLength(JSON.stringify(value), 'utf8') > max;
}

const DAYS_IN_MONTH = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** The number two ASCII digits at `at` spell, or -1. */
function twoDigits(value: string, at: number): number {
  const a = value.charCodeAt(at) - 48;
  const b = value.charCodeAt(at + 1) - 48;
  return a >= 0 && a <= 9 && b >= 0 && b <= 9 ? a * 10 + b : -1;
}

/**
 * isIsoTime(), answered without a regular expression for the form nearly every time takes,
 * `YYYY-MM-DDTHH:MM:SSZ` or `YYYY-MM-DDTHH:MM:SS.sssZ`; any other text goes to isIsoTime() itself.
 */
export function isIsoTimeText(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  const n = value.length;
  if ((n !== 20 && n !== 24) || value.charCodeAt(n - 1) !== 90 /* Z */) return isIsoTime(value);
  const century = twoDigits(value, 0);
  const yy = twoDigits(value, 2);
  const month = twoDigits(value, 5);
  const day = twoDigits(value, 8);
  const hour = twoDigits(value, 11);
  const minute = twoDigits(value, 14);
  const second = twoDigits(value, 17);
  const fraction = n === 20 || (value.charCodeAt(19) === 46 /* . */ && twoDigits(value, 20) !== -1 && twoDigits(value, 21) !== -1);
  if (
    century === -1 || yy === -1 || month === -1 || day === -1 || hour === -1 || minute === -1 || second === -1 || !fraction ||
    value.charCodeAt(4) !== 45 || value.charCodeAt(7) !== 45 || value.charCodeAt(10) !== 84 ||
    value.charCodeAt(13) !== 58 || value.charCodeAt(16) !== 58
  ) {
    return isIsoTime(value);
  }
  const year = century * 100 + yy;
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  const days = month === 2 && leap ? 29 : DAYS_IN_MONTH[month];
  return month >= 1 && month <= 12 && day >= 1 && day <= days && hour <= 23 && minute <= 59 && second <= 59;
}
