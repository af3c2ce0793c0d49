import { describe, expect, it } from 'vitest';
import { parseRateLimit, parseReset, parseRetryAfter, rateLimitWaitMs, serverNow } from '../../src/transport/rate-limit-headers.js';

const NOW = Date.UTC(2026, 2, 1, 12, 0, 0); // epoch ms

describe('parseReset', () => {
  it('reads values of 10^9 and above as epoch seconds', () => {
    expect(parseReset(String(NOW / 1000 + 30), NOW)).toBe(30_000);
    expect(parseReset('1000000000', NOW)).toBe(0); // long past: no wait, never negative
  });

  it('reads values below 10^9 as seconds remaining', () => {
    expect(parseReset('30', NOW)).toBe(30_000);
    expect(parseReset('0', NOW)).toBe(0);
    expect(parseReset('999999999', NOW)).toBe(999_999_999_000);
    expect(parseReset('1.5', NOW)).toBe(1_500);
  });

  it('ignores what is not a number', () => {
    for (const bad of [undefined, '', 'soon', '-5', '1e3', '12abc']) expect(parseReset(bad, NOW)).toBeUndefined();
  });
});

describe('parseRetryAfter', () => {
  it('reads delta seconds', () => {
    expect(parseRetryAfter('2', NOW)).toBe(2_000);
    expect(parseRetryAfter(' 0 ', NOW)).toBe(0);
  });

  it('reads an HTTP date', () => {
    expect(parseRetryAfter(new Date(NOW + 5_000).toUTCString(), NOW)).toBe(5_000);
    expect(parseRetryAfter(new Date(NOW - 5_000).toUTCString(), NOW)).toBe(0);
  });

  it('ignores nonsense', () => {
    expect(parseRetryAfter(undefined, NOW)).toBeUndefined();
    expect(parseRetryAfter('whenever', NOW)).toBeUndefined();
    expect(parseRetryAfter('-3', NOW)).toBeUndefined();
  });
});

describe('parseRateLimit', () => {
  it('reads limit, remaining and reset', () => {
    const info = parseRateLimit(
      { 'x-ratelimit-limit': '3000', 'x-ratelimit-remaining': '12', 'x-ratelimit-reset': String(NOW / 1000 + 2) },
      NOW,
    );
    expect(info).toEqual({ limit: 3000, remaining: 12, resetInMs: 2_000 });
  });

  it('leaves out what is missing or malformed', () => {
    expect(parseRateLimit({ 'x-ratelimit-remaining': 'lots' }, NOW)).toEqual({
      limit: undefined,
      remaining: undefined,
      resetInMs: undefined,
    });
  });

  it('reads an epoch reset against the server clock when the clocks disagree', () => {
    const serverTime = NOW + 120_000; // server two minutes ahead
    const headers = {
      date: new Date(serverTime).toUTCString(),
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': String(serverTime / 1000 + 3),
    };
    expect(serverNow(headers, NOW)).toBe(serverTime);
    expect(parseRateLimit(headers, NOW).resetInMs).toBe(3_000);
  });

  it('trusts the local clock when the Date header is within a whole second or two', () => {
    const headers = { date: new Date(NOW - 700).toUTCString(), 'x-ratelimit-reset': String(NOW / 1000 + 1) };
    expect(parseRateLimit(headers, NOW).resetInMs).toBe(1_000);
  });
});

describe('rateLimitWaitMs', () => {
  it('prefers Retry-After, then the reset', () => {
    expect(rateLimitWaitMs({ 'retry-after': '4', 'x-ratelimit-reset': '9' }, NOW)).toBe(4_000);
    expect(rateLimitWaitMs({ 'x-ratelimit-reset': '9' }, NOW)).toBe(9_000);
    expect(rateLimitWaitMs({}, NOW)).toBeUndefined();
  });
});
