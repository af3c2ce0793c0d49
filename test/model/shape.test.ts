// Item bounds: nesting depth, nested array length, well-formed Unicode (decisions.md leaves them to us).
import { describe, expect, it } from 'vitest';
import { itemProblems, shapeProblem, MAX_NESTING_DEPTH } from '../../src/model/index.js';

const nested = (levels: number): unknown => (levels === 0 ? 1 : { k: nested(levels - 1) });

describe('shapeProblem', () => {
  it('allows nesting up to the limit and names the field past it', () => {
    expect(shapeProblem({ external_id: 'u', v: nested(MAX_NESTING_DEPTH) })).toBeUndefined();
    expect(shapeProblem({ external_id: 'u', v: nested(MAX_NESTING_DEPTH + 1) })).toBe('v: nests deeper than 32 levels');
  });

  it('refuses a nested array of more than 10,000 values', () => {
    expect(shapeProblem({ tags: Array(10_000).fill('x') })).toBeUndefined();
    expect(shapeProblem({ props: { list: Array(10_001).fill(1) } })).toMatch(/^props: holds an array of more than 10000/);
  });

  it('refuses lone surrogates in values, nested values and names, and accepts paired ones', () => {
    expect(shapeProblem({ name: 'emoji 😀' })).toBeUndefined();
    expect(shapeProblem({ name: 'a\ud800' })).toMatch(/^name: .*Unicode/);
    expect(shapeProblem({ p: { q: ['ok', 'b\udc00'] } })).toMatch(/^p: .*Unicode/);
    expect(shapeProblem({ p: { ['k\ud800']: 1 } })).toMatch(/^p: .*name/);
    expect(shapeProblem({ ['f\ud800']: 1 })).toMatch(/field name/);
  });

  it('is the first check the validator makes on an item', () => {
    expect(itemProblems('events', { external_id: 'u\ud800', name: 'e', time: '2024-01-01T00:00:00Z' })).toEqual([
      'external_id: holds text that is not valid Unicode (a lone surrogate)',
    ]);
  });
});
