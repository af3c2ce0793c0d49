import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { unmatchedColumnProblems, validateColumnMap } from '../../src/mapping/column-map.js';
import { readCsvHeader } from '../../src/mapping/csv-rows.js';
import { editDistance, editDistanceWithin } from '../../src/mapping/suggest.js';

describe('validateColumnMap', () => {
  it('takes column -> header, or null to leave the column out', () => {
    const result = validateColumnMap({ Zip: 'zip:string', Notes: null });
    expect(result).toEqual({ ok: true, map: new Map([['Zip', 'zip:string'], ['Notes', null]]) });
  });

  it('names each entry it cannot use', () => {
    expect(validateColumnMap(['a'])).toEqual({ ok: false, problems: [expect.stringMatching(/must be a JSON object/)] });
    expect(validateColumnMap({ Zip: 3, Plan: '' })).toEqual({
      ok: false,
      problems: ['"Zip": must be a field name such as "zip:string", or null, got 3', '"Plan": must be a field name such as "zip:string", or null, got ""'],
    });
  });
});

describe('a map key', () => {
  it('names a column whose header writes spaces around its name, as the header is read without them', () => {
    const map = new Map<string, string | null>([['Contact ID', 'external_id'], ['Email', 'email'], ['Notes', null]]);
    const header = [' Contact ID ', 'Email  ', 'Notes ', 'Zip '];
    expect(unmatchedColumnProblems(map.keys(), [{ file: 'export.csv', columns: header }])).toEqual([]);
    const result = readCsvHeader(header, { map });
    if (!result.ok) throw new Error(result.problems.join('; '));
    expect(result.header.columns.map(({ field }) => field)).toEqual(['external_id', 'email', 'Zip']);
    expect(result.header.mapRow([' 1', 'a@x.com', 'x', '02134']).item).toEqual({ external_id: ' 1', email: 'a@x.com', Zip: '02134' });
    // a column written exactly as the key is taken first
    const exact = readCsvHeader(['Email', 'external_id'], { map: new Map([['Email', 'email']]) });
    expect(exact.ok && exact.header.columns.map(({ field }) => field)).toEqual(['email', 'external_id']);
  });
});

describe('unmatchedColumnProblems', () => {
  const crm = { file: 'export.csv', columns: ['Contact ID', 'E-mail Address', 'Mobile Phone', 'VIP'] };

  it('names each key no header has, with the column it likely means', () => {
    const map = new Map([['Email Adress', 'email'], ['contact id', 'external_id'], ['VIP', 'vip:boolean'], ['Zip', 'zip:string']]);
    expect(unmatchedColumnProblems(map.keys(), [crm])).toEqual([
      '"Email Adress" is not a column of export.csv; did you mean "E-mail Address"?',
      '"contact id" is not a column of export.csv; did you mean "Contact ID"?',
      '"Zip" is not a column of export.csv; the header has "Contact ID", "E-mail Address", "Mobile Phone", "VIP"',
    ]);
  });

  it('takes a column that only some of the inputs have, and names every input when none has it', () => {
    const events = { file: 'events.csv', columns: ['Contact ID', 'Event', 'When'] };
    expect(unmatchedColumnProblems(['VIP', 'Event'], [crm, events])).toEqual([]);
    expect(unmatchedColumnProblems(['Evnt'], [crm, events])).toEqual(['"Evnt" is not a column of any input (export.csv, events.csv); did you mean "Event"?']);
  });

  it('names the first three inputs and counts the others when none has the column (thousands of files of one export)', () => {
    const parts = Array.from({ length: 10_000 }, (_, i) => ({ file: `part-${i}.csv`, columns: crm.columns }));
    expect(unmatchedColumnProblems(['Tier'], parts)).toEqual([
      '"Tier" is not a column of any input (part-0.csv, part-1.csv, part-2.csv and 9,997 other files); the headers have "Contact ID", "E-mail Address", "Mobile Phone", "VIP"',
    ]);
    expect(unmatchedColumnProblems(['Tier'], parts.slice(0, 4))[0]).toContain('(part-0.csv, part-1.csv, part-2.csv and 1 other file)');
    expect(unmatchedColumnProblems(['Tier'], parts.slice(0, 3))[0]).toContain('(part-0.csv, part-1.csv, part-2.csv)');
  });

  it('finds the column in any script, case or accent, and a name held in a longer one', () => {
    const world = { file: 'world.csv', columns: ['Электронная почта', 'メールアドレス', 'Straße', 'Téléphone', 'Opted In (Y/N)'] };
    expect(unmatchedColumnProblems(['Электронная Почта', 'メールアドレ', 'STRASSE', 'Telephone', 'Opted In'], [world])).toEqual([
      '"Электронная Почта" is not a column of world.csv; did you mean "Электронная почта"?',
      '"メールアドレ" is not a column of world.csv; did you mean "メールアドレス"?',
      '"STRASSE" is not a column of world.csv; did you mean "Straße"?',
      '"Telephone" is not a column of world.csv; did you mean "Téléphone"?',
      '"Opted In" is not a column of world.csv; did you mean "Opted In (Y/N)"?',
    ]);
  });

  it('answers for thousands of columns and names of any length, as it does for a few', () => {
    const long = (i: number): string => `${'segment '.repeat(24)}${i}`;
    const wide = { file: 'wide.csv', columns: ['email', 'x'.repeat(200_000), ...Array.from({ length: 5_000 }, (_, i) => long(i))] };
    // a key one slip from a long name is found among them; a long key close to nothing is told with the header
    const slipped = long(4_321).replace('segment', 'segmnet');
    const problems = unmatchedColumnProblems([slipped, 'y'.repeat(50_000), 'Emial'], [wide]);
    expect(problems[0]).toBe(`${JSON.stringify(slipped)} is not a column of wide.csv; did you mean ${JSON.stringify(long(4_321))}?`);
    expect(problems[1]).toMatch(/^"y{50000}" is not a column of wide.csv; the header has "email", "x{200000}", /);
    expect(problems[2]).toBe('"Emial" is not a column of wide.csv; did you mean "email"?');
  });
});

describe('editDistanceWithin', () => {
  it('is the edit distance when it is within the limit, and the limit plus one beyond it', () => {
    const name = fc.string({ unit: fc.constantFrom('a', 'b', 'c', 'é'), maxLength: 12 });
    fc.assert(
      fc.property(name, name, fc.integer({ min: 0, max: 8 }), (a, b, limit) => {
        expect(editDistanceWithin(a, b, limit)).toBe(Math.min(editDistance(a, b), limit + 1));
      }),
      { numRuns: 2_000 },
    );
  });
});
