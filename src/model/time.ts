// ISO 8601 dates and times, read strictly (decisions.md "Events and purchases"): what Date.parse
// happens to accept is not enough, and the calendar date must exist.

const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|z|[+-]\d{2}(?::?\d{2})?)?$/;
const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

function isRealDate(year: number, month: number, day: number): boolean {
  return month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month);
}

/** A `YYYY-MM-DD` string naming a real calendar date (the `dob` rule). */
export function isCalendarDate(value: string): boolean {
  const m = DATE_ONLY.exec(value);
  return m !== null && isRealDate(Number(m[1]), Number(m[2]), Number(m[3]));
}

/**
 * Epoch milliseconds of an ISO 8601 date or date-time, or undefined when the text is not one.
 * A date-time without an offset is read as UTC; a date alone is not a date-time.
 */
export function parseIsoTime(value: string): number | undefined {
  const m = DATE_TIME.exec(value);
  if (m === null) return undefined;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (!isRealDate(year, month, day)) return undefined;
  const hour = Number(m[4]);
  const minute = Number(m[5]);
  const second = m[6] === undefined ? 0 : Number(m[6]);
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  const millis = m[7] === undefined ? 0 : Math.floor(Number(`0${m[7]}`) * 1000);
  let offsetMinutes = 0;
  const zone = m[8];
  if (zone !== undefined && zone !== 'Z' && zone !== 'z') {
    const sign = zone.startsWith('-') ? -1 : 1;
    const digits = zone.slice(1).replace(':', '');
    const oh = Number(digits.slice(0, 2));
    const om = digits.length > 2 ? Number(digits.slice(2)) : 0;
    if (oh > 23 || om > 59) return undefined;
    offsetMinutes = sign * (oh * 60 + om);
  }
  if (year >= 100) return Date.UTC(year, month - 1, day, hour, minute, second, millis) - offsetMinutes * 60_000;
  // Date.UTC maps years 0-99 onto 1900-1999, so set the full date on a Date instead: a 29 February of
  // year 0 must not roll over to 1 March first (1900 is not a leap year).
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, millis);
  return date.getTime() - offsetMinutes * 60_000;
}

export function isIsoTime(value: unknown): value is string {
  return typeof value === 'string' && parseIsoTime(value) !== undefined;
}

/**
 * Epoch milliseconds of a `$time` value: an ISO 8601 date-time, or a `YYYY-MM-DD` date read as
 * midnight UTC (decisions.md "Attributes"); undefined when it is neither.
 */
export function parseTimeValue(value: string): number | undefined {
  if (value.length === 10 && isCalendarDate(value)) return parseIsoTime(`${value}T00:00:00Z`);
  return parseIsoTime(value);
}

export function isTimeValue(value: unknown): value is string {
  return typeof value === 'string' && parseTimeValue(value) !== undefined;
}
