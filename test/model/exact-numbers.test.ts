// Numbers JavaScript cannot hold as written are found, with where they are, in JSON text; every
// number it holds exactly passes, whatever the text around it.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { inexactNumberIn, numberTextProblem } from '../../src/model/exact-numbers.js';

describe('inexactNumberIn', () => {
  it('finds a whole number beyond 2^53, an overflow and an underflow, naming the field', () => {
    expect(inexactNumberIn('{"external_id":"u1","properties":{"big":12345678901234567890}}')).toEqual({
      path: 'properties.big',
      message: expect.stringMatching(/^12345678901234567890 is a whole number beyond ±9007199254740991.*become 12345678901234567000.*quote it as a string/),
    });
    expect(inexactNumberIn('{"n":9007199254740993}')?.path).toBe('n');
    expect(inexactNumberIn('{"n":9007199254740994}')?.path).toBe('n'); // held exactly, but past the safe range, as in CSV
    expect(inexactNumberIn('{"x":[1,2,{"y":1e400}]}')).toEqual({ path: 'x[2].y', message: expect.stringMatching(/too large.*become null.*quote it as a string/) });
    expect(inexactNumberIn('{"x":[ -1E400 ]}')?.path).toBe('x[0]');
    expect(inexactNumberIn('{"t":1e-400}')).toEqual({ path: 't', message: expect.stringMatching(/too small.*become 0.*quote it as a string/) });
    expect(inexactNumberIn(`{"t":0.${'0'.repeat(400)}1}`)?.message).toMatch(/too small/);
    expect(inexactNumberIn('{"events":[{"a":1},{"p":{"k\\"q":3.14159265358979323846}}]}')).toEqual({
      path: 'events[1].p.k"q',
      message: expect.stringMatching(/more digits than a number holds.*become 3.141592653589793/),
    });
    expect(inexactNumberIn('12345678901234567890')?.path).toBe('');
  });

  it('passes numbers held exactly, and digits inside strings', () => {
    for (const text of [
      '{"a":"12345678901234567890","b":0.1,"c":1.5e3,"d":0.30000000000000004,"e":"x:1e400"}',
      '{"n":1e20,"m":-0,"z":0e5,"q":5e-324,"r":1.0,"s":-9007199254740991,"t":1E-7,"u":123456789012345.6}',
      '{"s":"a\\\\","n":[1e2, 2.5E+3]}',
    ]) {
      expect(inexactNumberIn(text), text).toBeUndefined();
    }
  });

  it('property: any double written in its shortest form is held, but for whole numbers past 2^53 written out in digits', () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.string(), (n, key) => {
        const text = JSON.stringify({ [key]: [n, { n }] });
        const safe = !Number.isInteger(n) || Number.isSafeInteger(n) || /e/.test(String(n));
        if (safe) expect(inexactNumberIn(text)).toBeUndefined();
      }),
    );
  });

  it('numberTextProblem reads a CSV cell the same way', () => {
    expect(numberTextProblem('2.50')).toBeUndefined();
    expect(numberTextProblem('1e-400')).toMatch(/too small/);
    expect(numberTextProblem('1e400')).toMatch(/too large/);
  });
});
