import { describe, expect, it } from 'vitest';
import { backoffCeiling, backoffDelay } from '../../src/transport/backoff.js';

const policy = { baseMs: 100, capMs: 1_000 };

describe('backoff', () => {
  it('doubles the ceiling per failure up to the cap', () => {
    expect([1, 2, 3, 4, 5, 6, 60].map((n) => backoffCeiling(n, policy))).toEqual([100, 200, 400, 800, 1000, 1000, 1000]);
  });

  it('draws uniformly below the ceiling (full jitter)', () => {
    expect(backoffDelay(3, policy, () => 0)).toBe(0);
    expect(backoffDelay(3, policy, () => 0.5)).toBe(200);
    expect(backoffDelay(3, policy, () => 0.999999)).toBe(399);
    expect(backoffDelay(40, policy, () => 0.999999)).toBeLessThan(1_000);
  });

  it('spreads real draws over the whole range', () => {
    const draws = Array.from({ length: 2_000 }, () => backoffDelay(4, policy));
    expect(Math.min(...draws)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...draws)).toBeLessThan(800);
    expect(draws.filter((d) => d < 400).length).toBeGreaterThan(700);
    expect(draws.filter((d) => d >= 400).length).toBeGreaterThan(700);
  });
});
