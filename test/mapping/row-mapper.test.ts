// The two ways of mapping a row (generated code for ordinary headers, a loop for very wide ones)
// give the same item and the same refusals for the same cells; a wide row's origin gives its cells
// back as they were.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CsvRowOrigin, mapCsvRow, readCsvHeader, type CsvHeader } from '../../src/mapping/csv-rows.js';
import { compileRowMapper, loopRowMapper, MAX_COMPILED_COLUMNS } from '../../src/mapping/row-mapper.js';

function plan(header: string[]): CsvHeader {
  const result = readCsvHeader(header, {});
  if (!result.ok) throw new Error(result.problems.join('; '));
  return result.header;
}

const HEADER = ['external_id', 'first_name', 'visits:inc', 'tags:add', 'prefs:json', 'address.city', 'address.zip:string', 'score', 'seen:time', 'ok:boolean', ''];
const CELLS = ['', 'null', '1', 'x', '["a"]', '{"a":1}', '02134', '2.5', 'true', '2024-03-07T10:00:00Z', '12345678901234567890'];

describe('the row mappers', () => {
  it('give the same item and the same refusals, cell for cell', () => {
    const p = plan(HEADER);
    const compiled = compileRowMapper(p.columns);
    const looped = loopRowMapper(p.columns);
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...CELLS), { minLength: HEADER.length, maxLength: HEADER.length }), (cells) => {
        expect(looped(cells)).toEqual(compiled(cells));
      }),
    );
  });

  it('map a header wider than the compiled limit with the loop, to the same items', () => {
    const header = ['external_id', ...Array.from({ length: MAX_COMPILED_COLUMNS + 500 }, (_, i) => `attr_${i}`)];
    const cells = ['u1', ...Array.from({ length: header.length - 1 }, (_, i) => (i % 4 === 0 ? '' : i % 4 === 1 ? String(i) : i % 4 === 2 ? 'null' : `w${i}`))];
    const mapped = mapCsvRow(plan(header), cells);
    expect(mapped).toEqual(compileRowMapper(plan(header).columns)(cells));
    expect(mapped.item.attr_1).toBe(1);
    expect(mapped.item.attr_2).toBeNull();
    expect(mapped.item.attr_3).toBe('w3');
    expect('attr_0' in mapped.item).toBe(false);
  });
});

describe('a wide row origin', () => {
  it('keeps its cells as one text and gives them back, for the rejects file and the worker', () => {
    const header = ['external_id', ...Array.from({ length: 999 }, (_, i) => `c${i}`)];
    const cells = header.map((_, i) => (i % 3 === 0 ? '' : `v${i},"é😀\n`));
    const p = plan(header);
    const origin = new CsvRowOrigin('wide.csv', 2, p, cells);
    expect(origin.width).toBe(1000);
    expect(origin.cells).toEqual(cells);
    expect(origin.row).toEqual(Object.fromEntries(header.map((key, i) => [key, cells[i]])));
    const lengths = new Uint32Array(1002);
    expect(origin.appendCells('>', lengths, 2)).toBe(`>${cells.join('')}`);
    expect([...lengths.subarray(2)]).toEqual(cells.map((c) => c.length));
    const narrow = new CsvRowOrigin('n.csv', 3, plan(['external_id', 'a']), ['u1', 'x']);
    const few = new Uint32Array(2);
    expect(narrow.appendCells('>', few, 0)).toBe('>u1x');
    expect([...few]).toEqual([2, 1]);
  });
});
