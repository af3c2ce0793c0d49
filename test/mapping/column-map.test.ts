import { describe, expect, it } from 'vitest';
import { validateColumnMap } from '../../src/mapping/column-map.js';

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
