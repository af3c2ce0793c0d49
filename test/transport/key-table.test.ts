import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KeyTable } from '../../src/transport/key-table.js';

describe('KeyTable', () => {
  it('agrees with a Map through any run of sets and deletes, growing as it fills', () => {
    // few distinct keys so that runs collide, wrap round the table and delete inside runs
    const key = fc.oneof(fc.integer({ min: -40, max: 40 }), fc.integer({ min: 0, max: 2 ** 30 - 1 }), fc.constantFrom(2 ** 40, -(2 ** 33)));
    const op = fc.tuple(fc.constantFrom('set', 'delete', 'get'), key, fc.integer());
    fc.assert(
      fc.property(fc.array(op, { maxLength: 400 }), (ops) => {
        const table = new KeyTable<number>(16);
        const map = new Map<number, number>();
        for (const [name, k, v] of ops) {
          if (name === 'set') {
            table.set(k, v);
            map.set(k, v);
          } else if (name === 'delete') expect(table.delete(k)).toBe(map.delete(k));
          expect(table.get(k)).toBe(map.get(k));
          expect(table.size).toBe(map.size);
        }
        for (const [k, v] of map) expect(table.get(k)).toBe(v);
      }),
      { numRuns: 2_000, seed: 5 },
    );
  });

  it('holds many keys coming and going without losing one', () => {
    const table = new KeyTable<number>();
    for (let i = 0; i < 200_000; i += 1) {
      table.set(i * 7919, i);
      if (i >= 2_000) expect(table.delete((i - 2_000) * 7919)).toBe(true);
    }
    expect(table.size).toBe(2_000);
    for (let i = 198_000; i < 200_000; i += 1) expect(table.get(i * 7919)).toBe(i);
    expect(table.get(0)).toBeUndefined();
  });
});
