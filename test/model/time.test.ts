// Strict ISO 8601 reading of times and dates (decisions.md "Events and purchases", "Attributes").
import { describe, expect, it } from 'vitest';
import { isCalendarDate, isIsoTime, parseIsoTime } from '../../src/model/index.js';

describe('parseIsoTime', () => {
  it.each([
    ['2024-03-07T10:00:00Z', Date.UTC(2024, 2, 7, 10, 0, 0)],
    ['2024-03-07T10:00:00z', Date.UTC(2024, 2, 7, 10, 0, 0)],
    ['2024-03-07T10:00:00', Date.UTC(2024, 2, 7, 10, 0, 0)],
    ['2024-03-07T10:00Z', Date.UTC(2024, 2, 7, 10, 0, 0)],
    ['2024-03-07T10:00:00+02:00', Date.UTC(2024, 2, 7, 8, 0, 0)],
    ['2024-03-07T10:00:00+0200', Date.UTC(2024, 2, 7, 8, 0, 0)],
    ['2024-03-07T10:00:00+02', Date.UTC(2024, 2, 7, 8, 0, 0)],
    ['2024-03-07T10:00:00-05:30', Date.UTC(2024, 2, 7, 15, 30, 0)],
    ['2024-03-07T10:00:00+05:45', Date.UTC(2024, 2, 7, 4, 15, 0)],
    ['2024-03-07T00:30:00+01:00', Date.UTC(2024, 2, 6, 23, 30, 0)],
    ['2024-12-31T23:30:00-01:00', Date.UTC(2025, 0, 1, 0, 30, 0)],
    ['2024-03-01T00:00:00+00:30', Date.UTC(2024, 1, 29, 23, 30, 0)],
    ['2024-03-07T10:00:00.123Z', Date.UTC(2024, 2, 7, 10, 0, 0, 123)],
    ['2024-03-07T10:00:00.5Z', Date.UTC(2024, 2, 7, 10, 0, 0, 500)],
    ['2024-03-07T10:00:00.123456789+01:00', Date.UTC(2024, 2, 7, 9, 0, 0, 123)],
    ['1970-01-01T00:00:00Z', 0],
  ])('reads %j as epoch %d', (input, epoch) => {
    expect(parseIsoTime(input)).toBe(epoch);
  });

  it('agrees with Date.parse on well-formed times', () => {
    for (const input of ['2024-02-29T12:34:56.789Z', '1999-12-31T23:59:59-08:00', '2038-01-19T03:14:07+00:00']) {
      expect(parseIsoTime(input)).toBe(Date.parse(input));
    }
  });

  it.each(['0000-02-29T00:00:00Z', '0004-02-29T12:00:00Z', '0050-06-01T00:00:00Z', '0099-12-31T23:59:59Z'])(
    'reads the early year in %j in the proleptic Gregorian calendar',
    (input) => {
      expect(parseIsoTime(input)).toBe(Date.parse(input));
    },
  );

  it.each([
    '2026-02-30T00:00:00Z',
    '2023-02-29T00:00:00Z',
    '1900-02-29T00:00:00Z',
    '2024-04-31T00:00:00Z',
    '2024-13-01T00:00:00Z',
    '2024-00-01T00:00:00Z',
    '2024-03-00T00:00:00Z',
    '2024-03-07T24:00:00Z',
    '2024-03-07T10:60:00Z',
    '2024-03-07T10:00:60Z',
    '2024-03-07T10:00:00+24:00',
    '2024-03-07T10:00:00+02:60',
    '2024-3-7T10:00:00Z',
    '2024-03-07T10Z',
    '2024-03-07',
    '2024-03-07T10:00:00 Z',
    '2024-03-07T10:00:00UTC',
    ' 2024-03-07T10:00:00Z',
    'Mar 7 2024 10:00',
    'March 7, 2024',
    '2024/03/07 10:00:00',
    'Thu, 07 Mar 2024 10:00:00 GMT',
    '1709805600',
    '',
  ])('says %j is not an ISO 8601 time', (input) => {
    expect(parseIsoTime(input)).toBeUndefined();
    expect(isIsoTime(input)).toBe(false);
  });

  it('says non-strings are not times', () => {
    for (const value of [1709805600, null, undefined, new Date(0), { $time: '2024-03-07T10:00:00Z' }]) {
      expect(isIsoTime(value)).toBe(false);
    }
    expect(isIsoTime('2024-03-07T10:00:00Z')).toBe(true);
  });
});

describe('isCalendarDate', () => {
  it.each(['2024-02-29', '2000-02-29', '2023-12-31', '0001-01-01'])('accepts %j', (input) => {
    expect(isCalendarDate(input)).toBe(true);
  });

  it.each(['2023-02-29', '1900-02-29', '2023-06-31', '2023-13-01', '2023-00-01', '2023-01-00', '2023-1-1', '20230101', '2023-01-01T00:00:00Z', ''])(
    'rejects %j',
    (input) => {
      expect(isCalendarDate(input)).toBe(false);
    },
  );
});
