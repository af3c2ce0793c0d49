import { describe, expect, it } from 'vitest';
import { unmatchedColumnProblems, validateColumnMap } from '../../src/mapping/column-map.js';

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
});
