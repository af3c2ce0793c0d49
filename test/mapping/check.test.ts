import { describe, expect, it } from 'vitest';
import { identityOf } from '../../src/model/identity.js';
import { isSmsGatewayEmail, itemErrors, itemWarnings, NO_FIELD_WARNING, SMS_GATEWAY_WARNING, SPACED_ID_WARNING } from '../../src/mapping/check.js';

const warnings = (kind: 'attributes' | 'events', item: Record<string, unknown>) => itemWarnings(kind, item, identityOf(item, kind).by);

describe('itemErrors', () => {
  it('gives the shared validator problems, each starting with its field', () => {
    expect(itemErrors('attributes', { external_id: 'u1', email: 'nope' })).toEqual([expect.stringMatching(/^email: /)]);
    expect(itemErrors('attributes', { external_id: 'u1', plan: 'pro' })).toEqual([]);
  });

  it('puts the mapping problems first and drops what the validator says about the fields they left out', () => {
    const errors = itemErrors(
      'purchases',
      { external_id: 'u1', product_id: 'p', currency: 'USD', time: '2024-03-07T10:00:00Z' },
      { errors: ['price: must be a number (the column is typed number), got "x"'], failed: ['price'] },
    );
    expect(errors).toEqual(['price: must be a number (the column is typed number), got "x"']);
  });
});

describe('itemWarnings', () => {
  it('warns of an email at an SMS carrier gateway, in words a user can act on (no section of a document they do not have)', () => {
    expect(SMS_GATEWAY_WARNING).toBe('email: is an SMS carrier gateway address; mail to it is not reliable and still counts towards email billing');
    expect(warnings('attributes', { external_id: 'u1', email: '4155552671@vtext.com' })).toEqual([SMS_GATEWAY_WARNING]);
    expect(warnings('events', { email: '+14155552671@txt.att.net', name: 'n', time: 't' })).toEqual([SMS_GATEWAY_WARNING]);
    expect(isSmsGatewayEmail('4155552671@sms.example-carrier.com')).toBe(true);
    expect(isSmsGatewayEmail('ada@vtext.com')).toBe(false);
    expect(isSmsGatewayEmail('ada@example.com')).toBe(false);
  });

  it('warns of an attributes item that sets no field', () => {
    expect(warnings('attributes', { external_id: 'u1' })).toEqual([NO_FIELD_WARNING]);
    expect(warnings('attributes', { email: 'ada@example.com', _update_existing_only: true })).toEqual([NO_FIELD_WARNING]);
    expect(warnings('attributes', { external_id: 'u1', email: 'ada@example.com' })).toEqual([]);
    expect(warnings('attributes', { external_id: 'u1', nickname: null })).toEqual([]);
  });

  it('warns of an external ID with white space at its start or end: it names another user', () => {
    expect(warnings('attributes', { external_id: ' sp1 ', plan: 'x' })).toEqual([SPACED_ID_WARNING]);
    expect(warnings('events', { external_id: 'sp1\u00a0', name: 'n', time: 't' })).toEqual([SPACED_ID_WARNING]);
    expect(warnings('attributes', { external_id: '\tsp1' })).toEqual([SPACED_ID_WARNING, NO_FIELD_WARNING]);
    expect(warnings('attributes', { external_id: 's p1', plan: 'x' })).toEqual([]);
    expect(warnings('attributes', { external_id: 'sp1', plan: 'x' })).toEqual([]);
  });

  it('warns of a time_zone the server will not set and a country it will store as null', () => {
    expect(warnings('attributes', { external_id: 'u1', time_zone: 'America/New_York', country: 'germany' })).toEqual([]);
    expect(warnings('attributes', { external_id: 'u1', time_zone: 'GMT+2', country: 'Narnia' })).toEqual([
      expect.stringMatching(/^time_zone: "GMT\+2" is not an IANA time zone name/),
      expect.stringMatching(/^country: "Narnia" is no ISO 3166-1 alpha-2 code/),
    ]);
    // any other value is taken too (decisions.md "Attributes"), and said
    expect(warnings('attributes', { external_id: 'u1', time_zone: '', country: 5 })).toEqual([
      expect.stringMatching(/^time_zone: "" is not an IANA time zone name/),
      expect.stringMatching(/^country: 5 is no ISO 3166-1 alpha-2 code/),
    ]);
    expect(itemErrors('attributes', { external_id: 'u1', time_zone: { a: 1 }, country: '' })).toEqual([]);
    // a value is shown shortened, as in other messages: not a megabyte of it in the summary
    expect(warnings('attributes', { external_id: 'u1', time_zone: 'x'.repeat(1_000_000), country: { deep: 'y'.repeat(1000) } })).toEqual([
      expect.stringMatching(/^time_zone: "x{40}\.\.\." is not/),
      expect.stringMatching(/^country: an object is no/),
    ]);
    expect(warnings('attributes', { external_id: 'u1', time_zone: null, country: null })).toEqual([]);
  });
});

describe('itemErrors: the rules decisions.md adds, before anything is sent', () => {
  it.each([
    ['attributes', { external_id: 'u1', car: { 'a.b': 1 } }, /^car\["a\.b"\]: /],
    ['attributes', { external_id: 'u1', pets: { $update: [{ $identifier_key: 'id' }] } }, /^pets\.\$update\[0\]: /],
    ['attributes', { external_id: 'u1', current_location: { latitude: 100, longitude: 0 } }, /^current_location: /],
    ['events', { external_id: 'u1', name: 'e', time: '2024-03-07T10:00:00Z', properties: { event_name: 'x' } }, /^properties\.event_name: /],
  ] as const)('%s item %j', (kind, item, problem) => {
    expect(itemErrors(kind, item)).toEqual([expect.stringMatching(problem)]);
  });
});
