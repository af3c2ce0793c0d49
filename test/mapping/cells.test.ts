import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ANNOTATION_READERS,
  CellProblem,
  PLAIN_DECIMAL,
  plainDecimalDot,
  readInferred,
  readTimeAttribute,
} from '../../src/mapping/cells.js';

describe('inference without an annotation (decisions.md "Reading files")', () => {
  it.each([
    ['0', 0],
    ['0.99', 0.99],
    ['-2.5', -2.5],
    ['10001', 10001],
    ['9007199254740991', 9007199254740991],
    ['true', true],
    ['false', false],
  ])('reads %j as %j', (text, value) => {
    expect(readInferred(text)).toBe(value);
  });

  it.each(['02134', '00000', '1e5', '12345678901234567890', '9007199254740992', 'TRUE', 'False', '1.', '.5', '+1', ' 1', '1,5', '0x10', '-', 'NaN', 'Infinity'])(
    'keeps %j as text',
    (text) => {
      expect(readInferred(text)).toBe(text);
    },
  );

  it('reads as a number exactly the text decisions.md calls a plain decimal (and a whole number within the safe range)', () => {
    const char = fc.constantFrom('0', '1', '2', '9', '-', '.', 'e', '+', ' ', 'x');
    fc.assert(
      fc.property(fc.array(char, { minLength: 1, maxLength: 20 }), (chars) => {
        const text = chars.join('');
        const plain = PLAIN_DECIMAL.test(text);
        expect(plainDecimalDot(text) !== -1).toBe(plain);
        const number = plain && (text.includes('.') || Number.isSafeInteger(Number(text)));
        expect(readInferred(text)).toBe(number ? Number(text) : text);
      }),
      { numRuns: 20_000, seed: 11 },
    );
  });
});

describe('annotated columns', () => {
  const read = (annotation: keyof typeof ANNOTATION_READERS, text: string) => ANNOTATION_READERS[annotation](text);
  const problem = (value: unknown) => (value instanceof CellProblem ? value.message : undefined);

  it(':string keeps the text', () => {
    expect(read('string', '02134')).toBe('02134');
    expect(read('string', 'true')).toBe('true');
  });

  it(':number reads any decimal notation, but not a whole number it cannot hold exactly', () => {
    expect(read('number', '1e5')).toBe(100000);
    expect(read('number', '02134')).toBe(2134);
    expect(read('number', '-0.5')).toBe(-0.5);
    expect(problem(read('number', 'abc'))).toMatch(/^must be a number .*got "abc"/);
    expect(problem(read('number', '12345678901234567890'))).toMatch(/too large to be kept exactly/);
  });

  it(':integer takes whole numbers only', () => {
    expect(read('integer', '-42')).toBe(-42);
    expect(problem(read('integer', '4.2'))).toMatch(/^must be a whole number/);
  });

  it(':boolean takes true/false and yes/no/y/n in any case, and 1/0', () => {
    expect([read('boolean', 'TRUE'), read('boolean', 'false'), read('boolean', '1'), read('boolean', '0')]).toEqual([true, false, true, false]);
    expect(['yes', 'No', 'Y', 'n', 'YES'].map((text) => read('boolean', text))).toEqual([true, false, true, false, true]);
    expect(problem(read('boolean', 'maybe'))).toMatch(/^must be true or false \(also yes, no, y, n, 1, 0/);
    expect(problem(read('boolean', 'ja'))).toMatch(/^must be true or false/);
  });

  it(':time takes ISO 8601 times; on a custom attribute it becomes {"$time": ...}', () => {
    expect(read('time', '2024-03-07T10:00:00Z')).toBe('2024-03-07T10:00:00Z');
    expect(readTimeAttribute('2024-03-07T10:00:00Z')).toEqual({ $time: '2024-03-07T10:00:00Z' });
    expect(problem(read('time', 'Mar 7 2024'))).toMatch(/^must be an ISO 8601 time/);
    expect(problem(read('time', '2024-02-30T00:00:00Z'))).toMatch(/^must be an ISO 8601 time/);
  });

  it(':json parses, :array insists on an array', () => {
    expect(read('json', '{"a":[1,2]}')).toEqual({ a: [1, 2] });
    expect(problem(read('json', '{a:1}'))).toMatch(/^is not valid JSON/);
    expect(read('array', '["a",1]')).toEqual(['a', 1]);
    expect(problem(read('array', '"a"'))).toMatch(/^must be a JSON array/);
  });

  it(':inc, :add and :remove make the operation objects of spec 2.3', () => {
    expect(read('inc', '3')).toEqual({ inc: 3 });
    expect(read('inc', '-1')).toEqual({ inc: -1 });
    expect(read('add', '["gold"]')).toEqual({ add: ['gold'] });
    expect(read('remove', '["bronze", 2]')).toEqual({ remove: ['bronze', 2] });
    expect(problem(read('inc', '1.5'))).toMatch(/^must be a whole number \(the column is typed inc\)/);
    expect(problem(read('add', 'gold'))).toMatch(/^must be a JSON array such as \["a","b"\], or a list such as a;b with --array-separator/);
    expect(problem(read('add', '[gold'))).toMatch(/^is not valid JSON/);
  });
});

describe('numbers a cell cannot be read as without changing them', () => {
  it('are refused by :number and inside :json cells, never rounded', async () => {
    const { readNumber, readJson, CellProblem } = await import('../../src/mapping/cells.js');
    expect(readNumber('1e-400')).toBeInstanceOf(CellProblem);
    expect((readNumber('1e-400') as InstanceType<typeof CellProblem>).message).toMatch(/too small.*type the column string/);
    expect((readNumber('3.14159265358979323846') as InstanceType<typeof CellProblem>).message).toMatch(/more digits than a number holds/);
    expect(readNumber('+1.5e3')).toBe(1500);
    expect(readNumber('0.30000000000000004')).toBe(0.30000000000000004);
    expect((readJson('{"a":[1,12345678901234567890]}') as InstanceType<typeof CellProblem>).message).toMatch(/^a\[1\]: 12345678901234567890 is a whole number/);
    expect(readJson('{"a":1e5}')).toEqual({ a: 100000 });
  });
});
