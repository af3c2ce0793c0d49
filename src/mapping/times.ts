// Times and dates as exports write them (`2023-02-02 01:15:00`, `03/03/2023 3:15 PM`, `2023-04-04`,
// epoch seconds), read into an instant: a time without an offset is read in the zone given (IANA,
// through Intl), and a slashed date only in the order given, since `03/04/2023` reads two ways.
import { isCalendarDate } from '../model/time.js';

export type DateOrder = 'mdy' | 'dmy';
export const DATE_ORDERS: readonly DateOrder[] = ['mdy', 'dmy'];

export interface TimeReading {
  /** IANA zone of times written without an offset; default UTC. */
  timeZone?: string;
  /** How a slashed date (`03/04/2023`) is read; without it such dates are refused. */
  dateOrder?: DateOrder;
}

/** What a time cell reads as: epoch milliseconds, or why it cannot be read (the text after `field: `). */
export type TimeResult = { ms: number } | { problem: string };

const TIME_PART = String.raw`(\d{1,2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(?:\s*([AaPp][Mm]))?(?:\s*(Z|z|[+-]\d{2}(?::?\d{2})?))?`;
/** `2023-02-02`, `2023-02-02 01:15`, `2023-02-02T01:15:00.5+02:00`, and `YYYY/MM/DD` with the same times. */
const YEAR_FIRST = new RegExp(String.raw`^(\d{4})([-/])(\d{1,2})\2(\d{1,2})(?:[T ]\s*${TIME_PART})?$`);
/** `03/04/2023`, `3.4.2023`, `03-04-2023 3:15 PM`: day and month in the order --date-order says. */
const YEAR_LAST = new RegExp(String.raw`^(\d{1,2})([-/.])(\d{1,2})\2(\d{4})(?:[T ]\s*${TIME_PART})?$`);
const EPOCH = /^\d{10}$|^\d{13}$/;

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

const isRealDate = (year: number, month: number, day: number): boolean =>
  month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month);

/** Epoch milliseconds of a wall-clock time as if it were UTC (years 100 and later). */
const wallMs = (y: number, mo: number, d: number, h: number, mi: number, s: number, ms: number): number => Date.UTC(y, mo - 1, d, h, mi, s, ms);

const formats = new Map<string, Intl.DateTimeFormat>();
const offsets = new Map<string, number>();

/** The zone's offset from UTC at an instant, in milliseconds (Intl's tables; cached per quarter hour). */
export function zoneOffsetMs(zone: string, utcMs: number): number {
  const key = `${zone}\u0000${Math.floor(utcMs / 900_000)}`;
  const cached = offsets.get(key);
  if (cached !== undefined) return cached;
  let format = formats.get(zone);
  if (format === undefined) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formats.set(zone, format);
  }
  const at = Math.floor(utcMs / 1000) * 1000;
  const part: Record<string, number> = {};
  for (const { type, value } of format.formatToParts(at)) if (type !== 'literal') part[type] = Number(value);
  const offset = wallMs(part.year, part.month, part.day, part.hour, part.minute, part.second, 0) - at;
  if (offsets.size > 10_000) offsets.clear();
  offsets.set(key, offset);
  return offset;
}

/**
 * The instant of a wall-clock time in a zone. A time the clocks pass twice (autumn) is the first of
 * the two; a time they skip (spring) is moved on by the gap, as Temporal's "compatible" reading does.
 */
export function wallToUtc(zone: string, wall: number): number {
  if (zone === 'UTC') return wall;
  const before = zoneOffsetMs(zone, wall - 86_400_000);
  const after = zoneOffsetMs(zone, wall + 86_400_000);
  const fits = (offset: number): boolean => zoneOffsetMs(zone, wall - offset) === offset;
  if (before === after) {
    const offset = zoneOffsetMs(zone, wall - before);
    return wall - offset;
  }
  const early = fits(before);
  const late = fits(after);
  if (early && late) return Math.min(wall - before, wall - after);
  if (early) return wall - before;
  if (late) return wall - after;
  return wall - before; // in the gap: the clock before the change, run on
}

function offsetMinutes(zone: string): number | undefined {
  if (zone === 'Z' || zone === 'z') return 0;
  const sign = zone.startsWith('-') ? -1 : 1;
  const digits = zone.slice(1).replace(':', '');
  const hours = Number(digits.slice(0, 2));
  const minutes = digits.length > 2 ? Number(digits.slice(2)) : 0;
  if (hours > 23 || minutes > 59) return undefined;
  return sign * (hours * 60 + minutes);
}

const SLASHED_ADVICE = 'give --date-order mdy or --date-order dmy to say how to read it';

/** Reads a date (and optional time) whose parts are matched: the instant, or what is wrong with it. */
function instant(
  reading: TimeReading,
  [year, month, day]: [number, number, number],
  time: Array<string | undefined>,
  orderNote: string,
): TimeResult {
  if (!isRealDate(year, month, day)) return { problem: `is not a real date${orderNote}` };
  const [hh, mm, ss, fraction, meridiem, zone] = time;
  let hour = hh === undefined ? 0 : Number(hh);
  const minute = mm === undefined ? 0 : Number(mm);
  const second = ss === undefined ? 0 : Number(ss);
  if (meridiem !== undefined) {
    if (hour < 1 || hour > 12) return { problem: 'has an hour outside 1-12 before AM or PM' };
    hour = (hour % 12) + (meridiem.toLowerCase() === 'pm' ? 12 : 0);
  }
  if (hour > 23 || minute > 59 || second > 59) return { problem: 'is not a real time of day' };
  const millis = fraction === undefined ? 0 : Math.floor(Number(`0${fraction}`) * 1000);
  const wall = wallMs(year, month, day, hour, minute, second, millis);
  if (zone !== undefined) {
    const offset = offsetMinutes(zone);
    if (offset === undefined) return { problem: 'has an offset that is not one' };
    return { ms: wall - offset * 60_000 };
  }
  return { ms: wallToUtc(reading.timeZone ?? 'UTC', wall) };
}

/**
 * The instant a time cell names, in any form this module reads: ISO 8601 with or without an offset
 * (a space for the T too), a date alone (midnight), `YYYY/MM/DD`, epoch seconds (10 digits) or
 * milliseconds (13), and, with a date order, `03/04/2023` with an optional `3:15 PM`.
 */
export function readTimeText(text: string, reading: TimeReading): TimeResult | undefined {
  const trimmed = text.trim();
  if (EPOCH.test(trimmed)) return { ms: trimmed.length === 10 ? Number(trimmed) * 1000 : Number(trimmed) };
  const first = YEAR_FIRST.exec(trimmed);
  if (first !== null) return instant(reading, [Number(first[1]), Number(first[3]), Number(first[4])], first.slice(5), '');
  const last = YEAR_LAST.exec(trimmed);
  if (last === null) return undefined;
  if (reading.dateOrder === undefined) return { problem: `is a date that reads two ways (day/month or month/day); ${SLASHED_ADVICE}` };
  const [a, b] = [Number(last[1]), Number(last[3])];
  const [month, day] = reading.dateOrder === 'mdy' ? [a, b] : [b, a];
  const note = reading.dateOrder === 'mdy' ? ' read as month/day/year (--date-order mdy)' : ' read as day/month/year (--date-order dmy)';
  return instant(reading, [Number(last[4]), month, day], last.slice(5), note);
}

const pad = (n: number): string => (n < 10 ? `0${n}` : String(n));

/**
 * A date of birth as `YYYY-MM-DD`: from `YYYY-MM-DD`, `YYYY/MM/DD`, a date at midnight written with
 * its time (`1990-05-02 00:00:00`), or a slashed date in the order given; undefined for other text
 * (the validator then says what a date of birth must be).
 */
export function readDateText(text: string, reading: TimeReading): { date: string } | { problem: string } | undefined {
  if (text.length === 10 && isCalendarDate(text)) return { date: text };
  // the form a date of birth must have: the validator says what is wrong with it
  if (/^\d{4}-\d{2}-\d{2}$/.test(text)) return undefined;
  const trimmed = text.trim();
  const first = YEAR_FIRST.exec(trimmed);
  const last = first === null ? YEAR_LAST.exec(trimmed) : null;
  const match = first ?? last;
  if (match === null) return undefined;
  const time = match.slice(5);
  if (time.some((part, i) => part !== undefined && !(i < 3 && Number(part) === 0))) {
    return { problem: 'is a date with a time of day; a date of birth is a date alone, such as 1990-05-02' };
  }
  let year: number;
  let month: number;
  let day: number;
  let note = '';
  if (first !== null) [year, month, day] = [Number(first[1]), Number(first[3]), Number(first[4])];
  else {
    if (reading.dateOrder === undefined) return { problem: `is a date that reads two ways (day/month or month/day); ${SLASHED_ADVICE}` };
    const [a, b] = [Number(match[1]), Number(match[3])];
    [month, day] = reading.dateOrder === 'mdy' ? [a, b] : [b, a];
    year = Number(match[4]);
    note = reading.dateOrder === 'mdy' ? ' read as month/day/year (--date-order mdy)' : ' read as day/month/year (--date-order dmy)';
  }
  if (!isRealDate(year, month, day)) return { problem: `is not a real date${note}` };
  return { date: `${year}-${pad(month)}-${pad(day)}` };
}
