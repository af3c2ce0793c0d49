// The filter of users a --delta run sent: it never misses a user it was given, and past the users its
// first filter was made for, the next filters keep false matches rare instead of filling up.
import { describe, expect, it } from 'vitest';
import { createSeenUsers } from '../../src/upload/seen-users.js';

/** Three lanes of a key's hash for user i, spread as keyHashInto spreads them (a fixed xorshift: the same users every run). */
function lanes(i: number, salt: number): [number, number, number] {
  let x = (Math.imul(i + 1, 0x9e3779b1) ^ salt) | 0;
  const next = (): number => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return x | 0;
  };
  next();
  return [next(), next(), next()];
}

describe('the filter of users a --delta run sent', () => {
  it('finds every user it was given, across every filter it made', () => {
    // made for 86,016 users (the smallest first filter): 300,000 take it through two more
    const seen = createSeenUsers(1_000);
    for (let i = 0; i < 300_000; i += 1) seen.add(...lanes(i, 1));
    let missed = 0;
    for (let i = 0; i < 300_000; i += 1) if (!seen.has(...lanes(i, 1))) missed += 1;
    expect(missed).toBe(0);
  });

  it('keeps false matches under 1 in 5,000 past the users its first filter was made for', () => {
    // one filter of the first's size would hold 1,000,000 users in 256 KiB: 3 in 4 new users would match
    const seen = createSeenUsers(1_000);
    expect(seen.has(...lanes(0, 2))).toBe(false);
    for (let i = 0; i < 1_000_000; i += 1) {
      const user = lanes(i, 2);
      if (!seen.has(...user)) seen.add(...user);
    }
    let matched = 0;
    for (let i = 0; i < 1_000_000; i += 1) if (seen.has(...lanes(i, 3))) matched += 1;
    expect(matched).toBeLessThan(200);
  });

  it('made for as many users as it is given, keeps false matches under 1 in 5,000 once full', () => {
    // about 24 bits a user: 1,000,000 users in 3 MiB
    const seen = createSeenUsers(1_000_000);
    for (let i = 0; i < 1_000_000; i += 1) seen.add(...lanes(i, 6));
    let matched = 0;
    for (let i = 0; i < 1_000_000; i += 1) if (seen.has(...lanes(i, 7))) matched += 1;
    expect(matched).toBeLessThan(200);
  });

  it('is sized for standard input when no size is known', () => {
    const seen = createSeenUsers(undefined);
    for (let i = 0; i < 100_000; i += 1) seen.add(...lanes(i, 4));
    let matched = 0;
    for (let i = 0; i < 100_000; i += 1) if (seen.has(...lanes(i, 5))) matched += 1;
    expect(matched).toBeLessThan(5);
  });
});
