import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ArrayName } from '../../src/model/types.js';
import { csvRowObject, CsvRowOrigin, jsonBytesBound, mapCsvRow, readCsvHeader, type CsvHeader } from '../../src/mapping/csv-rows.js';

function plan(header: string[], options: { kind?: ArrayName; map?: Map<string, string | null> } = {}): CsvHeader {
  const result = readCsvHeader(header, options);
  if (!result.ok) throw new Error(result.problems.join('; '));
  return result.header;
}

function problems(header: string[], options: { kind?: ArrayName } = {}): string[] {
  const result = readCsvHeader(header, options);
  return result.ok ? [] : result.problems;
}

const item = (header: string[], cells: string[], options?: { kind?: ArrayName }) => mapCsvRow(plan(header, options), cells).item;

describe('the kind of a file', () => {
  it('is purchases with a product_id column, events with name and time, attributes otherwise, unless given', () => {
    expect(plan(['external_id', 'product_id', 'currency', 'price', 'time']).kind).toBe('purchases');
    expect(plan(['external_id', 'name', 'time']).kind).toBe('events');
    expect(plan(['external_id', 'name']).kind).toBe('attributes');
    expect(plan(['external_id', 'name:string', 'time:time']).kind).toBe('events');
    expect(plan(['external_id', 'name', 'time'], { kind: 'attributes' }).kind).toBe('attributes');
  });
});

describe('mapping a row', () => {
  it('nests dotted headers', () => {
    expect(item(['external_id', 'address.city', 'address.geo.lat'], ['u1', 'Boston', '42.36'])).toEqual({
      external_id: 'u1',
      address: { city: 'Boston', geo: { lat: 42.36 } },
    });
    expect(item(['external_id', 'name', 'time', 'properties.plan'], ['u1', 'opened', '2024-03-07T10:00:00Z', 'pro'])).toEqual({
      external_id: 'u1',
      name: 'opened',
      time: '2024-03-07T10:00:00Z',
      properties: { plan: 'pro' },
    });
  });

  it('builds user_alias from its two columns', () => {
    expect(item(['user_alias.alias_name', 'user_alias.alias_label', 'plan'], ['anon-1', 'web', 'free'])).toEqual({
      user_alias: { alias_name: 'anon-1', alias_label: 'web' },
      plan: 'free',
    });
  });

  it('leaves out the field of an empty cell (a delta), and removes it for a cell reading null', () => {
    expect(item(['external_id', 'first_name', 'nickname', 'address.city'], ['u1', '', 'null', ''])).toEqual({
      external_id: 'u1',
      nickname: null,
    });
  });

  it('keeps identifiers, phone, app_id, product_id, currency and event name as text; reads an event time (epoch seconds here) into UTC', () => {
    expect(item(['external_id', 'phone', 'plan'], ['12345', '4155552671', '10'])).toEqual({ external_id: '12345', phone: '4155552671', plan: 10 });
    expect(item(['service_id', 'email'], ['007', 'true'])).toEqual({ service_id: '007', email: 'true' });
    expect(item(['external_id', 'name', 'time', 'app_id'], ['1', '404', '1700000000', '12'])).toEqual({
      external_id: '1',
      name: '404',
      time: '2023-11-14T22:13:20.000Z',
      app_id: '12',
    });
    expect(item(['external_id', 'product_id', 'currency', 'price', 'quantity', 'time'], ['1', '0042', 'USD', '9.99', '2', '2024-03-07T10:00:00Z'])).toEqual({
      external_id: '1',
      product_id: '0042',
      currency: 'USD',
      price: 9.99,
      quantity: 2,
      time: '2024-03-07T10:00:00Z',
    });
  });

  it('keeps standard text fields as text, and infers custom attributes', () => {
    expect(item(['external_id', 'first_name', 'country', 'zip', 'score', 'vip', 'big'], ['u1', 'true', '1', '02134', '0.5', 'false', '12345678901234567890'])).toEqual({
      external_id: 'u1',
      first_name: 'true',
      country: '1',
      zip: '02134',
      score: 0.5,
      vip: false,
      big: '12345678901234567890',
    });
  });

  it('reads push_tokens, subscription_groups and an event properties column as JSON', () => {
    expect(item(['external_id', 'push_tokens'], ['u1', '[{"app_id":"a","token":"t"}]'])).toEqual({
      external_id: 'u1',
      push_tokens: [{ app_id: 'a', token: 't' }],
    });
    expect(item(['external_id', 'name', 'time', 'properties'], ['u1', 'x', '2024-03-07T10:00:00Z', '{"a":1}']).properties).toEqual({ a: 1 });
  });

  it('types annotated columns and turns :inc, :add, :remove into operations; :time on a custom attribute is {"$time"}', () => {
    const header = ['external_id', 'visits:inc', 'tags:add', 'old:remove', 'zip:string', 'n:number', 'seen:time', 'prefs:json'];
    expect(item(header, ['u1', '2', '["a"]', '["b"]', '2134', '1e3', '2024-03-07T10:00:00Z', '{"x":true}'])).toEqual({
      external_id: 'u1',
      visits: { inc: 2 },
      tags: { add: ['a'] },
      old: { remove: ['b'] },
      zip: '2134',
      n: 1000,
      seen: { $time: '2024-03-07T10:00:00Z' },
      prefs: { x: true },
    });
  });

  it('reports a cell its column cannot read under the field name, and leaves the field out', () => {
    const mapped = mapCsvRow(plan(['external_id', 'visits:inc', 'prefs:json']), ['u1', 'many', '{bad']);
    expect(mapped.item).toEqual({ external_id: 'u1' });
    expect(mapped.errors).toEqual([
      'visits: must be a whole number (the column is typed inc), got "many"',
      expect.stringMatching(/^prefs: is not valid JSON/),
    ]);
    expect(mapped.failed).toEqual(['visits', 'prefs']);
  });

  it('renames and types columns through --map, naming the file column in messages, and leaves out mapped-away columns', () => {
    const map = new Map<string, string | null>([
      ['Customer ID', 'external_id'],
      ['Zip', 'zip:string'],
      ['Visits', 'visits:inc'],
      ['Notes', null],
    ]);
    const p = plan(['Customer ID', 'Zip', 'Visits', 'Notes'], { map });
    expect(mapCsvRow(p, ['C-1', '02134', '3', 'secret']).item).toEqual({ external_id: 'C-1', zip: '02134', visits: { inc: 3 } });
    expect(mapCsvRow(p, ['C-1', '', 'x', '']).errors).toEqual(['visits (column "Visits"): must be a whole number (the column is typed inc), got "x"']);
    expect(csvRowObject(p, ['C-1', '02134', '3', 'secret'])).toEqual({ external_id: 'C-1', 'zip:string': '02134', 'visits:inc': '3' });
  });

  it('takes spaces around a header name for an accident', () => {
    const p = plan(['external_id', ' email ', 'zip :string']);
    expect(mapCsvRow(p, ['u1', 'a@example.com', '02134']).item).toEqual({ external_id: 'u1', email: 'a@example.com', zip: '02134' });
    expect(csvRowObject(p, ['u1', 'a@example.com', '02134'])).toEqual({ external_id: 'u1', ' email ': 'a@example.com', 'zip :string': '02134' });
  });

  it('refuses a cell in a column with no name', () => {
    const p = plan(['external_id', '', 'plan']);
    expect(mapCsvRow(p, ['u1', '', 'pro']).errors).toBeUndefined();
    expect(mapCsvRow(p, ['u1', 'x', 'pro']).errors).toEqual(['column 2: has no name in the header; name the column or leave its cells empty']);
  });
});

describe('headers that cannot be used', () => {
  it('names each problem with its column', () => {
    expect(problems(['external_id', 'zip:strng'])).toEqual([expect.stringMatching(/^column 2 "zip:strng": unknown annotation ":strng"/)]);
    // one --map gave is said to be the map's, and no advice to rename the column with --map
    const mapped = readCsvHeader(['external_id', 'Tags'], { map: new Map([['Tags', 'tags:arry']]) });
    expect(mapped.ok ? [] : mapped.problems).toEqual([expect.stringMatching(/^column 2 "Tags", which --map names "tags:arry": unknown annotation ":arry"; known are .*; change that entry of --map$/)]);
    expect(problems(['external_id', 'plan', 'plan:string'])).toEqual(['columns 2 and 3 both fill "plan"']);
    expect(problems(['external_id', 'address', 'address.city'])).toEqual([expect.stringMatching(/column 3 "address.city" is inside column 2 "address"/)]);
    expect(problems(['external_id', 'a..b'])).toEqual([expect.stringMatching(/empty part between dots/)]);
    expect(problems(['external_id', '__proto__.x'])).toEqual([expect.stringMatching(/__proto__ cannot be a field name/)]);
    expect(problems(['first_name', 'plan'])).toEqual([expect.stringMatching(/no column that names the user/)]);
  });

  it('takes push_token_import as naming the user of attributes rows only (spec 2.5: an attributes field)', () => {
    expect(problems(['push_token_import', 'push_tokens'])).toEqual([]);
    expect(problems(['push_token_import', 'name', 'time'])).toEqual([expect.stringMatching(/no column that names the user/)]);
    expect(problems(['push_token_import', 'product_id', 'currency', 'price', 'time'])).toEqual([expect.stringMatching(/no column that names the user/)]);
    expect(problems(['push_token_import', 'name', 'time'], { kind: 'events' })).toEqual([expect.stringMatching(/no column that names the user/)]);
  });

  it('allows :inc, :add and :remove only on custom attributes of attributes files', () => {
    expect(problems(['external_id', 'address.visits:inc'])).toEqual([expect.stringMatching(/:inc applies to custom attributes .* not to nested fields/)]);
    expect(problems(['external_id', 'first_name:add'])).toEqual([expect.stringMatching(/not to first_name, which is not a custom attribute/)]);
    expect(problems(['external_id', 'name', 'time', 'count:inc'])).toEqual([expect.stringMatching(/not to events rows/)]);
  });

  it('keeps a colon followed by something other than a type as part of the name', () => {
    expect(item(['external_id', 'Time: UTC'], ['u1', 'noon'])).toEqual({ external_id: 'u1', 'Time: UTC': 'noon' });
  });
});

describe('rows as the rejects file shows them', () => {
  const p = plan(['external_id', 'points:inc', 'plan']);

  it('keeps every cell under its header, annotations included, so the row can be read again', () => {
    expect(csvRowObject(p, ['u1', 'x', ''])).toEqual({ external_id: 'u1', 'points:inc': 'x', plan: '' });
  });

  it('puts what does not fit a row of the wrong width under marker keys', () => {
    expect(csvRowObject(p, ['u1', '1', 'pro', 'extra', 'more'])).toEqual({
      external_id: 'u1',
      'points:inc': '1',
      plan: 'pro',
      _extra_cells: ['extra', 'more'],
    });
    expect(csvRowObject(p, ['u1'])).toEqual({ external_id: 'u1', _missing_columns: ['points:inc', 'plan'] });
  });

  it('builds the row of an origin only when asked, and includes it in JSON', () => {
    const origin = new CsvRowOrigin('a.csv', 7, p, ['u1', '2', 'pro']);
    expect(origin.row).toEqual({ external_id: 'u1', 'points:inc': '2', plan: 'pro' });
    expect(JSON.parse(JSON.stringify(origin))).toEqual({ file: 'a.csv', line: 7, row: { external_id: 'u1', 'points:inc': '2', plan: 'pro' } });
  });
});

describe('jsonBytesBound', () => {
  it('is never less than the bytes of the item as JSON', () => {
    const header = ['external_id', 'a', 'b.c', 'n:number', 'j:json', 't:time', 'i:inc', 'x:add'];
    const p = plan(header);
    const cell = fc.oneof(
      fc.string(),
      fc.string({ unit: 'binary' }),
      fc.constantFrom('', 'null', '1e20', '1E300', '0', '-0', '9.99', 'true', '["\\u0000"]', '"\\u00e9"', '2024-03-07T10:00:00Z', '[1e20,1e21]'),
    );
    fc.assert(
      fc.property(fc.array(cell, { minLength: header.length, maxLength: header.length }), (cells) => {
        const { item: mapped } = mapCsvRow(p, cells);
        expect(jsonBytesBound(p, cells)).toBeGreaterThanOrEqual(Buffer.byteLength(JSON.stringify(mapped)));
      }),
      { numRuns: 2000 },
    );
  });
});
