// Cells as exports write them: times in several forms and zones, dates of birth, national phones, lists.
import { describe, expect, it } from 'vitest';
import { CellProblem } from '../../src/mapping/cells.js';
import { mapCsvRow, readCsvHeader } from '../../src/mapping/csv-rows.js';
import { dateOfBirthReader, listReader, phoneReader, timeReader } from '../../src/mapping/export-cells.js';
import { readDateText, readTimeText, wallToUtc } from '../../src/mapping/times.js';

const iso = (text: string, reading = {}) => {
  const read = readTimeText(text, reading);
  return read === undefined ? undefined : 'ms' in read ? new Date(read.ms).toISOString() : read.problem;
};
const problem = (value: unknown) => (value instanceof CellProblem ? value.message : undefined);

describe('readTimeText', () => {
  it('reads the forms exports write, without an offset in UTC by default', () => {
    expect(iso('2023-02-02 01:15:00')).toBe('2023-02-02T01:15:00.000Z');
    expect(iso('2023-02-02 01:15')).toBe('2023-02-02T01:15:00.000Z');
    expect(iso('2023-02-02 01:15:00.250')).toBe('2023-02-02T01:15:00.250Z');
    expect(iso('2023-02-02T01:15:00')).toBe('2023-02-02T01:15:00.000Z');
    expect(iso('2023-04-04')).toBe('2023-04-04T00:00:00.000Z');
    expect(iso('2023/04/04 13:00')).toBe('2023-04-04T13:00:00.000Z');
    expect(iso('1679000000')).toBe('2023-03-16T20:53:20.000Z');
    expect(iso('1679000000123')).toBe('2023-03-16T20:53:20.123Z');
    expect(iso('2023-02-02 01:15:00+02:00')).toBe('2023-02-01T23:15:00.000Z');
  });

  it('reads slashed dates only in the order --date-order gives, with 12-hour times', () => {
    expect(iso('03/04/2023')).toMatch(/reads two ways.*--date-order mdy or --date-order dmy/);
    expect(iso('03/04/2023', { dateOrder: 'mdy' })).toBe('2023-03-04T00:00:00.000Z');
    expect(iso('03/04/2023', { dateOrder: 'dmy' })).toBe('2023-04-03T00:00:00.000Z');
    expect(iso('03/03/2023 3:15 PM', { dateOrder: 'mdy' })).toBe('2023-03-03T15:15:00.000Z');
    expect(iso('03/03/2023 12:05 am', { dateOrder: 'mdy' })).toBe('2023-03-03T00:05:00.000Z');
    expect(iso('13/03/2023', { dateOrder: 'mdy' })).toBe('is not a real date read as month/day/year (--date-order mdy)');
    expect(iso('31.12.2023 23:59', { dateOrder: 'dmy' })).toBe('2023-12-31T23:59:00.000Z');
  });

  it('refuses what is no time, and dates that do not exist', () => {
    expect(iso('Mar 7 2024')).toBeUndefined();
    expect(iso('12345')).toBeUndefined();
    expect(iso('2023-02-30 10:00')).toBe('is not a real date');
    expect(iso('2023-02-02 25:00')).toBe('is not a real time of day');
    expect(iso('2023-02-02 13:00 PM')).toMatch(/hour outside 1-12/);
  });

  it('reads a time without offset in --timezone, across daylight saving changes', () => {
    const ny = { timeZone: 'America/New_York' };
    expect(iso('2023-01-15 12:00', ny)).toBe('2023-01-15T17:00:00.000Z'); // EST, -5
    expect(iso('2023-07-15 12:00', ny)).toBe('2023-07-15T16:00:00.000Z'); // EDT, -4
    // 2023-03-12 02:30 does not exist in New York: moved on by the gap, to 03:30 EDT
    expect(iso('2023-03-12 02:30', ny)).toBe('2023-03-12T07:30:00.000Z');
    // 2023-11-05 01:30 happens twice: the first, still EDT
    expect(iso('2023-11-05 01:30', ny)).toBe('2023-11-05T05:30:00.000Z');
    expect(iso('2023-11-05 03:00', ny)).toBe('2023-11-05T08:00:00.000Z');
    expect(iso('2023-04-04', { timeZone: 'Europe/Berlin' })).toBe('2023-04-03T22:00:00.000Z');
    expect(iso('2023-04-04', { timeZone: 'Asia/Kolkata' })).toBe('2023-04-03T18:30:00.000Z');
    // an offset written in the cell wins over the zone
    expect(iso('2023-07-15T12:00:00Z', ny)).toBe('2023-07-15T12:00:00.000Z');
    expect(wallToUtc('UTC', 1000)).toBe(1000);
  });
});

describe('time cells', () => {
  it('sends every time in UTC: a time in Z as written, one with another offset as its instant, as {"$time"} on a custom attribute', () => {
    const read = timeReader({}, false, true);
    expect(read('2024-03-07T10:00:00Z')).toBe('2024-03-07T10:00:00Z');
    expect(read('2024-03-07T11:30:00+01:00')).toBe('2024-03-07T10:30:00.000Z');
    expect(read('2024-03-07T11:30:00-05:30')).toBe('2024-03-07T17:00:00.000Z');
    expect(read('2024-03-07T10:00:00')).toBe('2024-03-07T10:00:00.000Z');
    expect(timeReader({ timeZone: 'Europe/Berlin' }, true, true)('2024-03-07 10:00')).toEqual({ $time: '2024-03-07T09:00:00.000Z' });
    expect(problem(read('soon'))).toBe(
      'must be a time such as 2024-03-07T10:00:00Z, 2024-03-07 10:00, 2024-03-07, or epoch seconds (10 digits) or milliseconds (13) (the column is typed time), got "soon"',
    );
    expect(problem(read('01/02/2024'))).toMatch(/--date-order/);
  });

  it('the time of an event, not annotated, is not said to be typed', () => {
    const result = readCsvHeader(['external_id', 'name', 'time']);
    if (!result.ok) throw new Error('header');
    expect(result.header.kind).toBe('events');
    const { errors } = mapCsvRow(result.header, ['u1', 'login', '167900000']);
    expect(errors).toEqual(['time: must be a time such as 2024-03-07T10:00:00Z, 2024-03-07 10:00, 2024-03-07, or epoch seconds (10 digits) or milliseconds (13), got "167900000"']);
  });

  it('dob: YYYY-MM-DD as written, YYYY/MM/DD and slashed dates (with --date-order) rewritten', () => {
    const read = dateOfBirthReader({ dateOrder: 'dmy' });
    expect(read('1990-05-02')).toBe('1990-05-02');
    expect(read('1990/5/2')).toBe('1990-05-02');
    expect(read('02/05/1990')).toBe('1990-05-02');
    expect(read('1990-05-02 00:00:00')).toBe('1990-05-02');
    expect(problem(read('1990-05-02 13:00'))).toMatch(/date alone/);
    expect(problem(read('31/02/1990'))).toMatch(/^is not a real date read as day\/month\/year/);
    expect(problem(dateOfBirthReader({})('02/05/1990'))).toMatch(/--date-order/);
    expect(read('May 2nd')).toBe('May 2nd'); // the validator says what a dob must be
    expect(readDateText('1990/13/01', {})).toEqual({ problem: 'is not a real date' });
    expect(read('1990-02-30')).toBe('1990-02-30'); // refused by the validator, in its words
  });

  it('phones: national numbers read in --default-country, every number sent in E.164', () => {
    const read = phoneReader('US');
    expect(read('(415) 555-2671')).toBe('+14155552671');
    expect(read('4155552671')).toBe('+14155552671');
    expect(read('+44 20 7946 0958')).toBe('+442079460958');
    expect(problem(read('123'))).toMatch(/^is not a valid phone number, in US \(--default-country\) or with its country code/);
    expect(phoneReader('DE')('030 901820')).toBe('+4930901820');
  });

  it('lists: a JSON array as it is, other text split on the separator, trimmed, empty parts dropped', () => {
    expect(listReader(';', 'array')('vip;beta')).toEqual(['vip', 'beta']);
    expect(listReader(';', 'array')(' a ; ;b;')).toEqual(['a', 'b']);
    expect(listReader('|', 'array')('["x;y"]')).toEqual(['x;y']);
    expect(listReader(';', 'add', 'add')('gold')).toEqual({ add: ['gold'] });
    expect(listReader(';', 'remove', 'remove')('a;b')).toEqual({ remove: ['a', 'b'] });
    expect(problem(listReader(';', 'array')('[broken'))).toMatch(/^is not valid JSON/);
  });
});

describe('export cells in every kind of row', () => {
  it('--default-country reads the phone of events and purchases too, naming the user in E.164', () => {
    for (const header of [['phone', 'name', 'time'], ['phone', 'product_id', 'currency', 'price', 'time']]) {
      const result = readCsvHeader(header, { cells: { defaultCountry: 'US' } });
      if (!result.ok) throw new Error('header');
      const cells = header.map((column) => ({ phone: '(415) 555-2671', name: 'login', time: '2023-01-01T00:00:00Z', product_id: 'p', currency: 'USD', price: '1' })[column]!);
      expect(mapCsvRow(result.header, cells).item.phone).toBe('+14155552671');
      const bad = mapCsvRow(result.header, cells.map((cell, i) => (header[i] === 'phone' ? '123' : cell)));
      expect(bad.errors?.[0]).toMatch(/^phone: is not a valid phone number, in US \(--default-country\) or with its country code/);
    }
  });

  it('a list cell of separators alone is left out, as an empty cell is; a JSON [] is sent', () => {
    const result = readCsvHeader(['external_id', 'tags:array', 'more:add', 'less:remove'], { cells: { arraySeparator: ';' } });
    if (!result.ok) throw new Error('header');
    expect(result.header.mapRow(['u1', ';;', ' ; ', ';']).item).toEqual({ external_id: 'u1' });
    expect(result.header.mapRow(['u1', '[]', 'a;;b', ';']).item).toEqual({ external_id: 'u1', tags: [], more: { add: ['a', 'b'] } });
  });

  it(':boolean trims its cell, as other cells are', () => {
    const result = readCsvHeader(['external_id', 'vip:boolean']);
    if (!result.ok) throw new Error('header');
    expect(result.header.mapRow(['u1', ' yes ']).item).toEqual({ external_id: 'u1', vip: true });
    expect(result.header.mapRow(['u1', 'No\t']).item).toEqual({ external_id: 'u1', vip: false });
  });
});
