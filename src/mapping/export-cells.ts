// Cells as CRMs and spreadsheets write them, read into what the spec accepts: times in several forms
// (sent as ISO 8601 UTC), dates of birth, national phone numbers (sent in E.164) and lists split on a
// separator. The options are plain values, so they cross to the planning thread as they are.
import { parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js/max';
import { isoString, parseIsoTime } from '../model/time.js';
import { arrayOf, CellProblem, MAY_LEAVE_OUT, shown, type CellReader } from './cells.js';
import { readDateText, readTimeText, type TimeReading } from './times.js';

export interface CellOptions extends TimeReading {
  /** ISO 3166 alpha-2: phone numbers written without a country code are read in this country. */
  defaultCountry?: string;
  /** An array cell that is not a JSON array is split on this. */
  arraySeparator?: string;
  /** An empty cell of an attributes row sends null for its attribute (empty-as-null.ts says which). */
  emptyAsNull?: boolean;
}

const TIME_FORMS = 'such as 2024-03-07T10:00:00Z, 2024-03-07 10:00, 2024-03-07, or epoch seconds (10 digits) or milliseconds (13)';

/**
 * A time cell's value, always sent in UTC: text in UTC already (ending in `Z`) as written; a time with
 * another offset as its instant in UTC; any other form read (in --timezone) and sent in UTC. `typed`: the column is annotated `:time` (else it is a field that holds a time).
 */
export function timeReader(options: CellOptions, wrap: boolean, typed: boolean): CellReader {
  const why = typed ? ' (the column is typed time)' : '';
  return (text) => {
    let time: string;
    // an ISO time in UTC is sent as written; one with another offset names its instant exactly
    const last = text.charCodeAt(text.length - 1);
    const exact = (last === 90 || (last >= 48 && last <= 57)) && text.charCodeAt(10) === 84 /* T */ && hasOffset(text) ? parseIsoTime(text) : undefined;
    if (exact !== undefined) time = last === 90 ? text : isoString(exact);
    else {
      const read = readTimeText(text, options);
      if (read === undefined) return new CellProblem(`must be a time ${TIME_FORMS}${why}, got ${shown(text)}`);
      if ('problem' in read) return new CellProblem(`${read.problem}, got ${shown(text)}`);
      time = isoString(read.ms);
    }
    return wrap ? { $time: time } : time;
  };
}

function hasOffset(text: string): boolean {
  if (text.endsWith('Z') || text.endsWith('z')) return true;
  const sign = Math.max(text.lastIndexOf('+'), text.lastIndexOf('-'));
  return sign > 10;
}

/** A `dob` cell: `YYYY-MM-DD` as written, other date forms rewritten so; anything else left for the validator to refuse. */
export function dateOfBirthReader(options: CellOptions): CellReader {
  return (text) => {
    const read = readDateText(text, options);
    if (read === undefined) return text;
    return 'problem' in read ? new CellProblem(`${read.problem}, got ${shown(text)}`) : read.date;
  };
}

/** A phone cell read in the default country unless it carries its own code, sent in E.164. */
export function phoneReader(country: string): CellReader {
  const code = country as CountryCode;
  return (text) => {
    const parsed = parsePhoneNumberFromString(text, code);
    if (parsed !== undefined && parsed.isValid()) return parsed.number;
    return new CellProblem(`is not a valid phone number, in ${country} (--default-country) or with its country code, got ${shown(text)}`);
  };
}

/**
 * An array cell: a JSON array, or text split on the separator, each part trimmed, empty parts
 * dropped; a cell of separators and spaces alone holds no value and is left out, as an empty cell
 * is (an empty JSON array `[]` is sent: it says so).
 */
export function listReader(separator: string, typed: string, wrap?: 'add' | 'remove'): CellReader {
  const read: CellReader = (text) => {
    let values: unknown[] | CellProblem;
    if (text.trimStart().charCodeAt(0) === 91 /* [ */) values = arrayOf(text, typed);
    else {
      values = [];
      for (const part of text.split(separator)) {
        const value = part.trim();
        if (value !== '') values.push(value);
      }
      if (values.length === 0) return undefined;
    }
    if (values instanceof CellProblem || wrap === undefined) return values;
    return wrap === 'add' ? { add: values } : { remove: values };
  };
  MAY_LEAVE_OUT.add(read);
  return read;
}
