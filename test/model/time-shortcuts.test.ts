// The validator's and the stored times' shortcuts give exactly what the plain code gives.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isIsoTime, itemProblems, parseIsoTime } from '../../src/model/index.js';
import { isoString, nowIso, storedTime } from '../../src/model/time.js';

const digits = (n: number) => fc.array(fc.constantFrom(...'0123456789'), { minLength: n, maxLength: n }).map((a) => a.join(''));
const twoDigitsUpTo = (max: number) => fc.integer({ min: 0, max }).map((v) => String(v).padStart(2, '0'));

/** Times near and around the `YYYY-MM-DDTHH:MM:SS[.fff]Z` shape, valid and not. */
const timeLike = fc
  .tuple(
    digits(4),
    twoDigitsUpTo(19),
    twoDigitsUpTo(39),
    twoDigitsUpTo(29),
    twoDigitsUpTo(69),
    twoDigitsUpTo(69),
    fc.constantFrom('', '.1', '.12', '.123', '.1234', '.12a', '.xyz', ':'),
    fc.constantFrom('Z', 'z', '', '+01:00', '-0530', 'ZZ', ' '),
    fc.option(fc.tuple(fc.nat(23), fc.constantFrom(...'0123456789-:TZ.x+ ')), { nil: undefined }),
  )
  .map(([y, mo, d, h, mi, s, frac, zone, mutation]) => {
    let text = `${y}-${mo}-${d}T${h}:${mi}:${s}${frac}${zone}`;
    if (mutation !== undefined && mutation[0] < text.length) text = text.slice(0, mutation[0]) + mutation[1] + text.slice(mutation[0] + 1);
    return text;
  });

function hasTimeProblem(time: unknown): boolean {
  return itemProblems('events', { external_id: 'u', name: 'e', time }).some((p) => p.startsWith('time:'));
}

describe('time verdicts of the validator', () => {
  it('match isIsoTime for times of every shape', () => {
    fc.assert(fc.property(timeLike, (t) => hasTimeProblem(t) === !isIsoTime(t)), { numRuns: 20_000 });
  });

  it('match isIsoTime for any text of the lengths the shortcut reads', () => {
    const text = fc.oneof(fc.string({ minLength: 20, maxLength: 20 }), fc.string({ minLength: 24, maxLength: 24 }));
    fc.assert(fc.property(text, (t) => hasTimeProblem(t) === !isIsoTime(t)), { numRuns: 5_000 });
  });

  it('agree on leap days, month ends and the ends of the clock', () => {
    for (const t of [
      '2024-02-29T00:00:00Z', '2023-02-29T00:00:00Z', '1900-02-29T00:00:00Z', '2000-02-29T00:00:00Z', '0000-02-29T00:00:00Z',
      '2024-04-31T00:00:00Z', '2024-12-31T23:59:59.999Z', '2024-12-31T24:00:00Z', '2024-12-31T23:60:00Z', '2024-12-31T23:59:60Z',
      '2024-00-10T00:00:00Z', '2024-13-10T00:00:00Z', '2024-01-00T00:00:00Z', '９９９９-01-01T00:00:00Z',
    ]) {
      expect(hasTimeProblem(t), t).toBe(!isIsoTime(t));
    }
  });

  it('match isIsoTime for $time attribute values', () => {
    fc.assert(
      fc.property(timeLike, (t) => {
        const problems = itemProblems('attributes', { external_id: 'u', seen: { $time: t } });
        return problems.some((p) => p.includes('$time')) === !isIsoTime(t);
      }),
      { numRuns: 5_000 },
    );
  });
});

describe('stored times', () => {
  it('isoString writes what Date#toISOString writes', () => {
    const ms = fc.oneof(
      fc.integer({ min: -62_167_219_200_000 - 86_400_000, max: 253_402_300_800_000 + 86_400_000 }),
      fc.integer({ min: 0, max: 4_102_444_800_000 }),
      fc.constantFrom(0, -1, 1, -62_167_219_200_000, -62_167_219_200_001, 253_402_300_799_999, 253_402_300_800_000, 951_782_400_000),
    );
    fc.assert(fc.property(ms, (t) => isoString(t) === new Date(t).toISOString()), { numRuns: 20_000 });
  });

  it('storedTime gives the instant as toISOString writes it, for every time the validator accepts', () => {
    fc.assert(
      fc.property(timeLike.filter((t) => isIsoTime(t)), (t) => storedTime(t) === new Date(parseIsoTime(t) as number).toISOString()),
      { numRuns: 10_000 },
    );
    for (const t of ['2024-03-07T10:00:00Z', '2024-03-07T10:00:00.120Z', '0050-01-01T00:00:00Z', '2024-03-07T10:00:00+01:00', '0000-01-01T00:30:00+01:00']) {
      expect(storedTime(t)).toBe(new Date(parseIsoTime(t) as number).toISOString());
    }
  });

  it('nowIso is the current time as toISOString writes it', () => {
    const before = Date.now();
    const now = Date.parse(nowIso());
    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(Date.now());
    expect(nowIso()).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });
});
