// The emulator's shortcuts give exactly what the plain code gives (those for times: test/model/time-shortcuts.test.ts).
import { describe, expect, it } from 'vitest';
import { testHandler } from '../helpers/handler.js';

describe('custom attributes named like Object.prototype members', () => {
  it('are stored, incremented, merged and removed as any other', () => {
    const h = testHandler();
    try {
      const names = ['constructor', 'toString', 'hasOwnProperty', 'valueOf', '__proto__', 'isPrototypeOf'];
      h.track({ attributes: [{ external_id: 'u', ...Object.fromEntries(names.map((n) => [n, 1])) }] });
      h.track({ attributes: [{ external_id: 'u', constructor: { inc: 2 }, toString: { add: ['a'] }, valueOf: { x: 1 } }] });
      h.track({ attributes: [{ external_id: 'u', _merge_objects: true, valueOf: { y: 2 }, hasOwnProperty: null }] });
      const custom = h.user('u')!.custom_attributes;
      expect(Object.keys(custom).sort()).toEqual(['__proto__', 'constructor', 'isPrototypeOf', 'toString', 'valueOf'].sort());
      expect(Object.getOwnPropertyDescriptor(custom, 'constructor')?.value).toBe(3);
      expect(Object.getOwnPropertyDescriptor(custom, 'toString')?.value).toEqual(['a']);
      expect(Object.getOwnPropertyDescriptor(custom, 'valueOf')?.value).toEqual({ x: 1, y: 2 });
      expect(Object.getOwnPropertyDescriptor(custom, '__proto__')?.value).toBe(1);
      expect(Object.getPrototypeOf(custom)).toBe(Object.prototype);
    } finally {
      h.close();
    }
  });
});
