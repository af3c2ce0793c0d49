// --drop-invalid-fields: which fields a row may go without, and what the rejects file keeps of them.
import { describe, expect, it } from 'vitest';
import { itemErrors } from '../../src/mapping/check.js';
import { droppedFieldRow, withoutInvalidFields } from '../../src/mapping/drop-fields.js';

const drop = (item: Record<string, unknown>, failed?: string[], mappedErrors?: string[]) =>
  withoutInvalidFields(item, itemErrors('attributes', item, { errors: mappedErrors, failed }), failed);

describe('withoutInvalidFields', () => {
  it('leaves out an invalid field of a row whose user is named by another', () => {
    expect(drop({ external_id: 'u1', email: 'a@example.com', phone: '123', dob: '1990-02-30', plan: 'pro' })).toEqual({
      item: { external_id: 'u1', email: 'a@example.com', plan: 'pro' },
      dropped: [
        { field: 'phone', errors: ['phone: is not a valid phone number, got "123"'] },
        { field: 'dob', errors: ['dob: must be a real date in YYYY-MM-DD form, got "1990-02-30"'] },
      ],
    });
    // a cell the mapping could not read is already out of the item
    expect(drop({ email: 'a@example.com', plan: 'pro' }, ['vip'], ['vip: must be true or false'])?.dropped).toEqual([{ field: 'vip', errors: ['vip: must be true or false'] }]);
  });

  it('keeps the row whole when the identifier that names its user is what is wrong, or nothing would be left', () => {
    expect(drop({ email: 'not-an-email', plan: 'pro' })).toBeUndefined();
    expect(drop({ external_id: '', plan: 'pro' })).toBeUndefined();
    expect(drop({ external_id: 'u1', phone: '123' })).toBeUndefined();
  });

  it('the record of a dropped field holds the identifier and the field, under their columns', () => {
    const row = { 'Customer': 'u1', external_id: 'u1', email: 'a@example.com', 'tags:array': 'x', 'address.city': '', plan: 'pro' };
    expect(droppedFieldRow(row, { external_id: 'u1' }, 'tags')).toEqual({ row: { external_id: 'u1', 'tags:array': 'x' }, column: 'tags:array', value: 'x' });
  });
});

describe('phone advice', () => {
  it('says to give --default-country for a number written without its country code', () => {
    // a valid 10-digit U.S. number is read as U.S. without one (decisions.md); a national number of another country is not
    expect(itemErrors('attributes', { external_id: 'u1', phone: '(415) 555-2671' })).toEqual([]);
    expect(itemErrors('attributes', { external_id: 'u1', phone: '020 7946 0958' })).toEqual([
      'phone: is not a valid phone number without its country code; give --default-country (such as --default-country US) to read national numbers in that country, got "020 7946 0958"',
    ]);
    expect(itemErrors('attributes', { external_id: 'u1', phone: '+1 123' })).toEqual(['phone: is not a valid phone number, got "+1 123"']);
  });
});
