// Nested custom attributes, operations on arrays of objects and the standard fields beyond the spec
// (decisions.md "Attributes"), and the property rules of events and purchases ("Events and purchases").
import { describe, expect, it } from 'vitest';
import { countryCode, isTimeZoneName, itemProblems } from '../../src/model/index.js';
import { attrs, event, expectAccepted, expectRejected, purchase } from './items.js';

describe('nested custom attributes', () => {
  it('accepts nested objects and arrays of objects within the rules, $time inside included', () => {
    expectAccepted('attributes', attrs({ car: { make: 'Volvo', year: 2020, seen: { $time: '2020-05-28' }, tags: ['a', 1] } }));
    expectAccepted('attributes', attrs({ stays: [{ hotel: 'Ritz', nights: 2 }, { hotel: 'Savoy', when: { $time: '2024-03-07T10:00:00Z' } }] }));
  });

  it.each([
    ['a key with a dot', { car: { 'model.name': 'x' } }, /^car\["model\.name"\]: nested keys must not contain "\."/],
    ['a key starting with $', { car: { $make: 'x' } }, /^car\["\$make"\]: nested keys must not start with \$/],
    ['an empty key', { car: { inner: { '': 1 } } }, /^car\.inner\[""\]: nested keys must not be empty/],
    ['a key over 255 characters', { car: { ['k'.repeat(256)]: 1 } }, /nested keys are at most 255 characters/],
    ['a string over 255 characters', { car: { engine: { name: 'x'.repeat(256) } } }, /^car\.engine\.name: nested strings are at most 255/],
    ['a null inside', { car: { make: null } }, /^car\.make: a nested value must not be null/],
    ['a bad $time', { car: { bought: { $time: 'yesterday' } } }, /^car\.bought: \$time must be an ISO 8601 time/],
    ['a null in an array of objects', { stays: [{ hotel: 'a' }, { hotel: null }] }, /^stays\[1\]\.hotel: a nested value must not be null/],
    ['a long string in an array of objects', { stays: [{ notes: ['ok', 'y'.repeat(300)] }] }, /^stays\[0\]\.notes\[1\]: nested strings/],
  ])('refuses %s, naming the attribute and the path inside it', (_, extra, message) => {
    expectRejected('attributes', attrs(extra), message);
  });

  it('refuses a nested value over 100 KB as JSON, and takes one just under', () => {
    const fields = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 'v'.repeat(200)]));
    expectAccepted('attributes', attrs({ big: fields(400) }));
    expectRejected('attributes', attrs({ big: fields(600) }), /^big: a nested value is at most 100 KB as JSON/);
    expectRejected('attributes', attrs({ list: Array.from({ length: 600 }, () => ({ v: 'v'.repeat(200) })) }), /^list: a nested value is at most 100 KB/);
  });

  it('takes a date-only $time at the top level and refuses a date that does not exist', () => {
    expectAccepted('attributes', attrs({ joined: { $time: '2020-05-28' } }));
    expectRejected('attributes', attrs({ joined: { $time: '2020-02-30' } }), /^joined: \$time must be/);
  });
});

describe('operations on arrays of objects', () => {
  it('accepts $add, $remove and $update in their documented forms', () => {
    expectAccepted('attributes', attrs({ pets: { $add: [{ id: 1, type: 'dog' }] } }));
    expectAccepted('attributes', attrs({ pets: { $remove: [{ $identifier_key: 'id', $identifier_value: 1 }] } }));
    expectAccepted('attributes', attrs({ pets: { $update: [{ $identifier_key: 'id', $identifier_value: 1, $new_object: { age: 3 } }] } }));
  });

  it.each([
    ['$add of no array', { pets: { $add: { id: 1 } } }, /^pets\.\$add: must be an array/],
    ['$add of a scalar', { pets: { $add: [1] } }, /^pets\.\$add\[0\]: must be an object/],
    ['$add of a broken object', { pets: { $add: [{ 'a.b': 1 }] } }, /^pets\.\$add\[0\]\["a\.b"\]: nested keys must not contain/],
    ['$remove without $identifier_value', { pets: { $remove: [{ $identifier_key: 'id' }] } }, /^pets\.\$remove\[0\]: needs \$identifier_key/],
    ['$update without $identifier_key', { pets: { $update: [{ $identifier_value: 1, $new_object: {} }] } }, /^pets\.\$update\[0\]: needs/],
    ['$update whose $new_object is no object', { pets: { $update: [{ $identifier_key: 'id', $identifier_value: 1, $new_object: 5 }] } }, /^pets\.\$update\[0\]\.\$new_object: must be an object/],
  ])('refuses %s', (_, extra, message) => {
    expectRejected('attributes', attrs(extra), message);
  });

  it('takes add and remove together, each an array of scalars', () => {
    expectAccepted('attributes', attrs({ tags: { add: ['a'], remove: ['b'] } }));
    expectRejected('attributes', attrs({ tags: { add: ['a'], remove: 'b' } }), /^tags\.remove: must be an array/);
  });
});

describe('standard fields beyond the spec', () => {
  it('accepts each in its documented form', () => {
    expectAccepted(
      'attributes',
      attrs({
        current_location: { latitude: 59.9, longitude: -10.7 },
        date_of_first_session: '2024-03-07T10:00:00Z',
        date_of_last_session: '2024-03-08T10:00:00+02:00',
        email_open_tracking_disabled: true,
        email_click_tracking_disabled: false,
        image_url: 'https://example.com/a.png',
        facebook: { id: '1', likes: ['a'], num_friends: 3 },
        twitter: { id: 1, screen_name: 'ann' },
        time_zone: 'Not/AZone',
        country: 'Narnia',
      }),
    );
  });

  it.each([
    ['current_location out of range', { current_location: { latitude: 91, longitude: 0 } }, /^current_location: must be/],
    ['current_location as text', { current_location: '59.9,10.7' }, /^current_location: must be/],
    ['date_of_first_session not a time', { date_of_first_session: 'last week' }, /^date_of_first_session: must be an ISO 8601 time/],
    ['email_open_tracking_disabled as text', { email_open_tracking_disabled: 'yes' }, /^email_open_tracking_disabled: must be true or false/],
    ['facebook as text', { facebook: 'ann' }, /^facebook: must be an object/],
  ])('refuses %s', (_, extra, message) => {
    expectRejected('attributes', attrs(extra), message);
  });

  it('keeps them out of custom attributes', () => {
    expect(itemProblems('attributes', attrs({ image_url: 'x', 'current_location': null }))).toEqual([]);
  });

  it('asks for a device_id of at least 8 bytes with push_token_import', () => {
    const token = (device_id: string) => ({ push_token_import: true, push_tokens: [{ app_id: 'a', token: 't', device_id }] });
    expectAccepted('attributes', token('12345678'));
    expectRejected('attributes', token('1234567'), /^push_tokens\[0\]\.device_id: must be at least 8 bytes/);
    expectAccepted('attributes', attrs({ push_tokens: [{ app_id: 'a', token: 't', device_id: 'short' }] }));
  });
});

describe('country and time_zone', () => {
  it('reads alpha-2 codes in any case and well-known English names; anything else is no country', () => {
    expect(countryCode('us')).toBe('US');
    expect(countryCode('De')).toBe('DE');
    expect(countryCode('United States')).toBe('US');
    expect(countryCode('germany')).toBe('DE');
    expect(countryCode("Côte d'Ivoire")).toBe('CI');
    expect(countryCode('United Kingdom')).toBe('GB');
    expect(countryCode('Narnia')).toBeNull();
    expect(countryCode('XX')).toBeNull();
  });

  it('knows IANA zone names, not offsets or other spellings', () => {
    for (const zone of ['America/New_York', 'Europe/Oslo', 'UTC', 'Etc/GMT+5', 'US/Eastern']) expect(isTimeZoneName(zone), zone).toBe(true);
    for (const zone of ['america/new_york', '+01:00', 'Narnia', 'Mars/Olympus_Mons', '']) expect(isTimeZoneName(zone), zone).toBe(false);
  });
});

describe('event and purchase properties', () => {
  it.each(['events', 'purchases'] as const)('%s: refuses the reserved names time and event_name', (kind) => {
    const item = kind === 'events' ? event : purchase;
    expectRejected(kind, item({ properties: { time: 'x' } }), /^properties\.time: time is a reserved name/);
    expectRejected(kind, item({ properties: { event_name: 'x' } }), /^properties\.event_name: event_name is a reserved name/);
  });

  it.each(['events', 'purchases'] as const)('%s: refuses a property string over 255 characters, and takes 255', (kind) => {
    const item = kind === 'events' ? event : purchase;
    expectAccepted(kind, item({ properties: { note: 'x'.repeat(255) } }));
    expectRejected(kind, item({ properties: { note: 'x'.repeat(256) } }), /^properties\.note: property strings are at most 255/);
  });

  it('refuses a long string at any depth of an event property', () => {
    expectRejected('events', event({ properties: { a: { b: [{ c: 'x'.repeat(256) }] } } }), /^properties\.a\.b\[0\]\.c: property strings/);
  });

  it('refuses properties over 100 KB as JSON', () => {
    const properties = Object.fromEntries(Array.from({ length: 600 }, (_, i) => [`p${i}`, 'v'.repeat(200)]));
    expectRejected('events', event({ properties }), /^properties: must be at most 100 KB as JSON/);
    expectRejected('purchases', purchase({ properties }), /^properties: must be at most 100 KB as JSON/);
  });

  it('keeps purchase properties to strings and numbers (spec 2.6)', () => {
    expectRejected('purchases', purchase({ properties: { gift: true } }), /^properties\.gift: purchase properties are strings and numbers/);
  });
});
