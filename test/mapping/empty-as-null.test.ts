// --empty-as-null: which empty cells clear their attribute, that the null an empty cell made is told
// from one a cell wrote, and that the generated and the looped row mappers agree.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { mapCsvRow, readCsvHeader, type CsvHeader } from '../../src/mapping/csv-rows.js';
import { compileRowMapper, loopRowMapper } from '../../src/mapping/row-mapper.js';

function header(columns: string[], options: Parameters<typeof readCsvHeader>[1] = {}): { header: CsvHeader; notes: string[] } {
  const result = readCsvHeader(columns, { ...options, cells: { emptyAsNull: true, ...options.cells } });
  if (!result.ok) throw new Error(result.problems.join('; '));
  return result;
}

describe('--empty-as-null', () => {
  it('sends null for an empty attribute cell, in its place, and says which nulls came from empty cells', () => {
    const { header: h } = header(['external_id', 'first_name', 'company', 'dob', 'vip:boolean', 'tags:array', 'plan']);
    const mapped = mapCsvRow(h, ['u1', '', '', '', '', '', 'null']);
    expect(mapped.item).toEqual({ external_id: 'u1', first_name: null, company: null, dob: null, vip: null, tags: null, plan: null });
    expect(Object.keys(mapped.item)).toEqual(['external_id', 'first_name', 'company', 'dob', 'vip', 'tags', 'plan']);
    // `plan` was written null in its cell: an explicit null, not an emptied one
    expect(mapped.emptied).toEqual(['first_name', 'company', 'dob', 'vip', 'tags']);
    expect(mapCsvRow(h, ['u1', 'Ada', 'Acme', '1990-05-02', 'yes', '["a"]', 'pro'])).toEqual({
      item: { external_id: 'u1', first_name: 'Ada', company: 'Acme', dob: '1990-05-02', vip: true, tags: ['a'], plan: 'pro' },
    });
  });

  it('never clears what names the user, the control fields, push tokens, subscription groups or operations that add', () => {
    const { header: h } = header(['external_id', 'email', 'phone', '_update_existing_only:boolean', 'push_tokens', 'subscription_groups', 'visits:inc', 'tags:add', 'tags2:remove', 'points.inc']);
    expect(mapCsvRow(h, ['u1', '', '', '', '', '', '', '', '', '']).item).toEqual({ external_id: 'u1' });
    const { header: alias } = header(['user_alias.alias_name', 'user_alias.alias_label', 'email', 'company']);
    expect(mapCsvRow(alias, ['', '', 'a@example.com', '']).item).toEqual({ email: 'a@example.com', company: null });
  });

  it('clears a nested attribute when all its dotted columns are empty, and only then', () => {
    const { header: h } = header(['external_id', 'address.city', 'address.zip:string', 'plan']);
    expect(mapCsvRow(h, ['u1', '', '', 'pro'])).toEqual({ item: { external_id: 'u1', address: null, plan: 'pro' }, emptied: ['address'] });
    expect(mapCsvRow(h, ['u1', 'Boston', '', 'pro']).item).toEqual({ external_id: 'u1', address: { city: 'Boston' }, plan: 'pro' });
  });

  it('clears a list cell of separators alone, which holds no value, as an empty one', () => {
    const { header: h } = header(['external_id', 'tags:array'], { cells: { arraySeparator: ';' } });
    expect(mapCsvRow(h, ['u1', ' ; ;']).item).toEqual({ external_id: 'u1', tags: null });
    expect(mapCsvRow(h, ['u1', 'a;b']).item).toEqual({ external_id: 'u1', tags: ['a', 'b'] });
  });

  it('clears nothing of events and purchases, and nothing without the flag', () => {
    const { header: events } = header(['external_id', 'name', 'time', 'properties.plan']);
    expect(mapCsvRow(events, ['u1', 'login', '2024-01-01T00:00:00Z', '']).item).toEqual({ external_id: 'u1', name: 'login', time: '2024-01-01T00:00:00Z' });
    const plain = readCsvHeader(['external_id', 'company']);
    if (!plain.ok) throw new Error('header');
    expect(mapCsvRow(plain.header, ['u1', ''])).toEqual({ item: { external_id: 'u1' } });
  });

  it('is not applied to a CSV rejects file read back, whose rows hold only some of their cells, and says so', () => {
    const { header: h, notes } = header(['external_id', 'company', 'phone', '_file', '_line', '_kind', '_column', '_errors']);
    expect(mapCsvRow(h, ['u1', '', '+14155552671', 'a.csv', '3', 'attributes', 'phone', 'phone: bad']).item).toEqual({ external_id: 'u1', phone: '+14155552671' });
    expect(notes).toContain('--empty-as-null is not applied to a rejects file read back: its rows hold only the cells their own file had (a dropped field, only its cell), so an empty cell there says nothing');
  });

  it('gives the same items, refusals and emptied attributes from the generated mapper and the loop', () => {
    const { header: h } = header(['external_id', 'first_name', 'visits:inc', 'tags:array', 'address.city', 'address.zip:string', 'score', 'ok:boolean'], {
      cells: { arraySeparator: ';' },
    });
    const compiled = compileRowMapper(h.columns, nullsOf(h));
    const looped = loopRowMapper(h.columns, nullsOf(h));
    const cell = fc.constantFrom('', 'null', '1', 'x', ';', 'a;b', 'true', 'maybe');
    fc.assert(
      fc.property(fc.array(cell, { minLength: 8, maxLength: 8 }), (cells) => {
        const a = compiled(cells);
        expect(looped(cells)).toEqual(a);
        expect(Object.keys(looped(cells).item)).toEqual(Object.keys(a.item));
        expect(h.mapRow(cells)).toEqual(a);
      }),
    );
  });
});

/** The null groups a header's mapper was made with, found again from its columns. */
function nullsOf(h: CsvHeader) {
  const nulls: Array<{ name: string; at: number; cells: number[] }> = [];
  h.columns.forEach((column, at) => {
    const name = column.path[0];
    if (name === 'external_id' || name === 'visits') return;
    const known = nulls.find((entry) => entry.name === name);
    if (known === undefined) nulls.push({ name, at, cells: [column.index] });
    else known.cells.push(column.index);
  });
  return nulls;
}
