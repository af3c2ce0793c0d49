import { describe, expect, it } from 'vitest';
import { createLineMapper } from '../../src/mapping/ndjson-lines.js';
import { CSV_ROW_TEXT, CSV_TEXT_AFTER_QUOTE, CSV_UNCLOSED_QUOTE } from '../../src/model/index.js';

describe('NDJSON lines', () => {
  const itemsOf = createLineMapper();

  it('takes an item line with the kind its fields suggest', () => {
    expect(itemsOf({ external_id: 'u1', plan: 'pro' })).toEqual([{ kind: 'attributes', item: { external_id: 'u1', plan: 'pro' }, row: { external_id: 'u1', plan: 'pro' } }]);
    expect(itemsOf({ external_id: 'u1', name: 'x', time: 't' })[0].kind).toBe('events');
    expect(itemsOf({ email: 'a@b.co', product_id: 'p', currency: 'USD', price: 1, time: 't' })[0].kind).toBe('purchases');
  });

  it('takes every line as --kind says', () => {
    expect(createLineMapper({ kind: 'events' })({ external_id: 'u1', plan: 'pro' })[0].kind).toBe('events');
  });

  it('takes the items of a request-shaped line one by one, in the arrays they are in', () => {
    const line = { attributes: [{ external_id: 'u1' }], events: [{ external_id: 'u1', name: 'n', time: 't' }, { external_id: 'u2', name: 'n', time: 't' }] };
    expect(itemsOf(line).map((entry) => [entry.kind, 'item' in entry ? entry.item : undefined])).toEqual([
      ['attributes', { external_id: 'u1' }],
      ['events', { external_id: 'u1', name: 'n', time: 't' }],
      ['events', { external_id: 'u2', name: 'n', time: 't' }],
    ]);
  });

  it('does not mistake an item with an array attribute named like an array of the request for a request', () => {
    expect(itemsOf({ external_id: 'u1', events: ['a', 'b'] })).toEqual([
      { kind: 'attributes', item: { external_id: 'u1', events: ['a', 'b'] }, row: { external_id: 'u1', events: ['a', 'b'] } },
    ]);
  });

  it('refuses a line that is not an object, and an array of a request that is not an array', () => {
    expect(itemsOf([1, 2])).toEqual([{ kind: 'unknown', row: [1, 2], errors: [expect.stringMatching(/^line: must be a JSON object/)] }]);
    expect(itemsOf({ attributes: [], events: { external_id: 'u1' } })).toEqual([
      { kind: 'events', row: { external_id: 'u1' }, errors: ['events: must be an array of events items'] },
    ]);
  });

  describe('lines of a rejects file fed back in', () => {
    it('reads a CSV row again by its headers, annotations included', () => {
      const reject = { file: 'users.csv', line: 4, kind: 'attributes', row: { external_id: 'u3', 'points:inc': '7', zip: '02134', score: '10001' }, errors: ['x'] };
      expect(itemsOf(reject)).toEqual([
        { kind: 'attributes', row: reject.row, item: { external_id: 'u3', points: { inc: 7 }, zip: '02134', score: 10001 } },
      ]);
    });

    it('keeps the kind the reject names', () => {
      const reject = { file: 'events.csv.gz', line: 2, kind: 'events', row: { external_id: 'u1', name: '404', time: '2024-03-07T10:00:00Z' }, errors: ['x'] };
      expect(itemsOf(reject)[0]).toMatchObject({ kind: 'events', item: { name: '404' } });
    });

    it('rejects again a row of the wrong width that was not fixed', () => {
      const reject = { file: 'users.csv', line: 2, kind: 'attributes', row: { external_id: 'u1', plan: 'pro', _extra_cells: ['x'] }, errors: ['x'] };
      expect(itemsOf(reject)[0]).toMatchObject({ errors: [expect.stringMatching(/^_extra_cells: the row had the wrong number of cells/)] });
    });

    it('asks for cells under their headers in place of the text of a CSV row that could not be read', () => {
      const reject = { file: 'users.csv', line: 2, kind: 'attributes', row: 'u1,"ab"c', errors: ['x'] };
      const again = [{ kind: 'attributes', row: 'u1,"ab"c', errors: [CSV_ROW_TEXT] }];
      expect(CSV_ROW_TEXT).toMatch(/^row: is the text of a CSV row .* object of cells under their headers/);
      expect(itemsOf(reject)).toEqual(again);
      // from standard input or a file read as CSV whatever its name, told by the reason it was rejected
      const fromStdin = { file: '-', line: 2, kind: 'attributes', row: 'u1,"ab"c', errors: [CSV_TEXT_AFTER_QUOTE] };
      expect(itemsOf(fromStdin)).toEqual(again);
      expect(itemsOf({ ...fromStdin, file: 'x.rejects.ndjson', errors: [CSV_ROW_TEXT] })).toEqual(again);
      expect(itemsOf({ ...fromStdin, file: 'a.txt', errors: [CSV_UNCLOSED_QUOTE] })).toEqual(again);
      // an NDJSON line that was not JSON is still parsed again
      expect(itemsOf({ ...fromStdin, file: 'a.ndjson', row: '{"external_id":"u2"}', errors: ['line: is not valid JSON'] })[0]).toMatchObject({ item: { external_id: 'u2' } });
    });

    it('takes an NDJSON item as it is, and parses again the text of a line that was not JSON', () => {
      expect(itemsOf({ file: 'a.ndjson', line: 1, kind: 'attributes', row: { external_id: 'u1', zip: '02134' }, errors: [] })[0]).toMatchObject({
        kind: 'attributes',
        item: { external_id: 'u1', zip: '02134' },
      });
      expect(itemsOf({ file: 'a.ndjson', line: 2, kind: 'unknown', row: '{"external_id":"u2"}', errors: [] })[0]).toMatchObject({
        kind: 'attributes',
        item: { external_id: 'u2' },
      });
      expect(itemsOf({ file: 'a.ndjson', line: 2, kind: 'unknown', row: '{"external_id":', errors: [] })[0]).toMatchObject({
        errors: [expect.stringMatching(/^row: is not valid JSON/)],
      });
    });
  });
});

describe('a rejected line fed back as text', () => {
  it('is read again as the line was: a number that cannot be held is refused, naming its field under row', () => {
    const items = createLineMapper()({ file: 'a.ndjson', line: 3, kind: 'attributes', row: '{"external_id":"u1","big":12345678901234567890}', errors: [] });
    expect(items).toEqual([{ kind: 'attributes', row: '{"external_id":"u1","big":12345678901234567890}', errors: [expect.stringMatching(/^row\.big: 12345678901234567890 is a whole number/)] }]);
  });
});
