// ISO 8601 dates and times, read strictly (decisions.md "Events and purchases"): what Date.parse
// happens to accept is not enough, and the calendar date must exist. Also the text of stored times,
// exactly as Date#toISOString() writes it, without a Date per call.

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

/** 0000-01-01T00:00:00.000Z and +010000-01-01T00:00:00.000Z: the times with a four-digit year. */
const FIRST_FOUR_DIGIT_MS = -62_167_219_200_000;
const FIRST_SIX_DIGIT_MS = 253_402_300_800_000;

const DIGITS = Array.from({ length: 100 }, (_, i) => (i < 10 ? `0${i}` : String(i)));

/**
 * Date#toISOString() of a time in epoch milliseconds, computed with integer arithmetic for the years
 * 0000-9999 (the only ones it writes with four digits); other times go to Date.
 */
export function isoString(ms: number): string {
  if (!Number.isInteger(ms) || ms < FIRST_FOUR_DIGIT_MS || ms >= FIRST_SIX_DIGIT_MS) return new Date(ms).toISOString();
  const days = Math.floor(ms / 86_400_000);
  let rest = ms - days * 86_400_000;
  const hour = Math.floor(rest / 3_600_000);
  rest -= hour * 3_600_000;
  const minute = Math.floor(rest / 60_000);
  rest -= minute * 60_000;
  const second = Math.floor(rest / 1000);
  const millis = rest - second * 1000;
  // the civil date of a day count from 1970-01-01 (H. Hinnant, "chrono-compatible low-level date algorithms")
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  const millisText = millis < 10 ? `00${millis}` : millis < 100 ? `0${millis}` : String(millis);
  return `${DIGITS[Math.floor(year / 100)]}${DIGITS[year % 100]}-${DIGITS[month]}-${DIGITS[day]}T${DIGITS[hour]}:${DIGITS[minute]}:${DIGITS[second]}.${millisText}Z`;
}

let lastMs = Number.NaN;
let lastText = '';

/** The current time as toISOString() writes it; the text is reused while the millisecond is the same. */
export function nowIso(): string {
  const ms = Date.now();
  if (ms !== lastMs) {
    lastMs = ms;
    lastText = isoString(ms);
  }
  return lastText;
}

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

/**
 * Whether an ISO time the validator accepted is written `YYYY-MM-DDTHH:MM:SS` and then `Z` or `.sssZ`:
 * a UTC time whose stored form is the text itself (with `.000` when it has no fraction).
 */
function isPlainUtc(value: string): boolean {
  const n = value.length;
  if (n !== 20 && n !== 24) return false;
  if (value.charCodeAt(n - 1) !== 90 /* Z */) return false;
  for (let i = 0; i < 19; i += 1) {
    const c = value.charCodeAt(i);
    const want = i === 4 || i === 7 ? 45 /* - */ : i === 10 ? 84 /* T */ : i === 13 || i === 16 ? 58 /* : */ : -1;
    if (want === -1 ? !isDigit(c) : c !== want) return false;
  }
  if (n === 24) {
    if (value.charCodeAt(19) !== 46 /* . */) return false;
    for (let i = 20; i < 23; i += 1) if (!isDigit(value.charCodeAt(i))) return false;
  }
  return true;
}

/**
 * The stored form of a time the validator accepted (an ISO 8601 date-time): the instant in UTC as
 * toISOString() writes it. Not for unvalidated text: a plain UTC time is taken as a real one.
 */
export function storedTime(value: string): string {
  if (isPlainUtc(value)) return value.length === 24 ? value : `${value.slice(0, 19)}.000Z`;
  return isoString(parseIsoTime(value) as number);
}
