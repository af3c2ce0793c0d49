// Batch limit profiles (spec 8; decisions.md "Batch limits: two profiles").
import { describe, expect, it } from 'vitest';
import { LIMIT_PROFILES, isLimitProfileName, limitViolation, resolveLimits } from '../../src/model/index.js';

const sizes = (attributes: number, events: number, purchases: number) => ({ attributes, events, purchases });

describe('limit profiles', () => {
  it('defines mau as 50 across the arrays and legacy as 75 per array', () => {
    expect(LIMIT_PROFILES.mau).toEqual({ maxTotal: 50 });
    expect(LIMIT_PROFILES.legacy).toEqual({ maxPerArray: 75 });
  });

  it('defaults to the strict mau profile', () => {
    expect(resolveLimits()).toEqual({ maxTotal: 50, maxPerArray: undefined });
    expect(resolveLimits('legacy')).toEqual({ maxTotal: undefined, maxPerArray: 75 });
  });

  it('lays explicit numbers over the named profile', () => {
    expect(resolveLimits('mau', { maxTotal: 10 })).toEqual({ maxTotal: 10, maxPerArray: undefined });
    expect(resolveLimits('legacy', { maxPerArray: 100 })).toEqual({ maxTotal: undefined, maxPerArray: 100 });
    expect(resolveLimits('legacy', { maxTotal: 120 })).toEqual({ maxTotal: 120, maxPerArray: 75 });
  });

  it('does not change the shared profile objects', () => {
    resolveLimits('mau', { maxTotal: 1 });
    expect(LIMIT_PROFILES.mau.maxTotal).toBe(50);
  });

  it.each([
    ['mau', true],
    ['legacy', true],
    ['MAU', false],
    ['strict', false],
    ['toString', false],
    ['', false],
  ])('knows whether %j is a profile name', (name, expected) => {
    expect(isLimitProfileName(name)).toBe(expected);
  });
});

describe('limitViolation', () => {
  const mau = resolveLimits('mau');
  const legacy = resolveLimits('legacy');

  it.each([
    [sizes(50, 0, 0)],
    [sizes(0, 0, 50)],
    [sizes(20, 20, 10)],
    [sizes(0, 0, 0)],
  ])('passes %j under mau', (counts) => {
    expect(limitViolation(counts, mau)).toBeUndefined();
  });

  it.each([
    [sizes(51, 0, 0)],
    [sizes(20, 20, 11)],
    [sizes(0, 26, 25)],
  ])('rejects %j under mau', (counts) => {
    expect(limitViolation(counts, mau)).toMatch(/^request has 51 items; at most 50 are allowed/);
  });

  it.each([
    [sizes(75, 75, 75)],
    [sizes(75, 0, 0)],
  ])('passes %j under legacy', (counts) => {
    expect(limitViolation(counts, legacy)).toBeUndefined();
  });

  it.each([
    [sizes(76, 0, 0), 'attributes'],
    [sizes(0, 76, 0), 'events'],
    [sizes(75, 75, 76), 'purchases'],
  ])('rejects %j under legacy, naming %s', (counts, name) => {
    expect(limitViolation(counts, legacy)).toMatch(new RegExp(`^${name} has 76 items; at most 75`));
  });

  it('applies both caps when both are given', () => {
    const both = { maxTotal: 100, maxPerArray: 40 };
    expect(limitViolation(sizes(40, 40, 20), both)).toBeUndefined();
    expect(limitViolation(sizes(41, 0, 0), both)).toMatch(/attributes has 41/);
    expect(limitViolation(sizes(40, 40, 21), both)).toMatch(/request has 101 items/);
  });

  it('has no cap when the limits name none', () => {
    expect(limitViolation(sizes(1000, 1000, 1000), {})).toBeUndefined();
  });
});
