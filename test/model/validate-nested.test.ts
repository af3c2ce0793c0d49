// Nested custom attributes, operations on arrays of objects and the standard fields beyond the spec
// (decisions.md "Attributes"), and the property rules of events and purchases ("Events and purchases").
import { describe, expect, it } from 'vitest';
import { countryCode, isTimeZoneName, itemProblems, storedTimeZone } from '../../src/model/index.js';
import { TIME_ZONE_DISPLAY_NAMES } from '../../src/model/time-zone-names.js';
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
    ['a key with a space', { car: { 'model name': 'x' } }, /^car\["model name"\]: nested keys must not contain spaces/],
    ['a key with a space in an array of objects', { stays: [{ hotel: { 'room no': 1 } }] }, /^stays\[0\]\.hotel\["room no"\]: nested keys must not contain spaces/],
    ['a $time after the year 3000', { car: { bought: { $time: '3001-01-01' } } }, /^car\.bought: \$time must be in the years 0 to 3000 \(UTC\), got "3001-01-01"/],
    ['a $time whose offset takes it past 3000', { car: { bought: { $time: '3000-12-31T20:00:00-04:00' } } }, /^car\.bought: \$time must be in the years 0 to 3000/],
    ['a $time whose offset takes it before the year 0', { car: { bought: { $time: '0000-01-01T00:30:00+01:00' } } }, /^car\.bought: \$time must be in the years 0 to 3000/],
    ['a $time a millisecond before the year 0', { car: { bought: { $time: '0000-01-01T00:59:59.999+01:00' } } }, /^car\.bought: \$time must be in the years 0 to 3000/],
    ['a $time a millisecond after the year 3000', { car: { bought: { $time: '3001-01-01T01:00:00.000+01:00' } } }, /^car\.bought: \$time must be in the years 0 to 3000/],
    ['a $time after 3000 in an object $add carries', { pets: { $add: [{ born: { $time: '9999-01-01' } }] } }, /^pets\.\$add\[0\]\.born: \$time must be in the years 0 to 3000/],
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

  it('takes nested times in the years 0 to 3000, at both ends, and a key holding no space', () => {
    expectAccepted('attributes', attrs({ car: { first: { $time: '0000-01-01' }, last: { $time: '3000-12-31T23:59:59.999Z' }, model_name: 'x', 'tab\tkey': 1 } }));
    // the same instants written with an offset
    expectAccepted('attributes', attrs({ car: { first: { $time: '0000-01-01T01:00:00+01:00' }, last: { $time: '3001-01-01T00:59:59.999+01:00' } } }));
    expectAccepted('attributes', attrs({ car: { last: { $time: '3001-01-01T03:00:00+04:00' } } }));
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
    ['$update without $new_object', { pets: { $update: [{ $identifier_key: 'id', $identifier_value: 1 }] } }, /^pets\.\$update\[0\]: needs \$new_object \(an object: what the matched elements become\)$/],
  ])('refuses %s', (_, extra, message) => {
    expectRejected('attributes', attrs(extra), message);
  });

  it('accepts $add, $remove and $update together in one object, in any order', () => {
    const add = [{ id: 3 }];
    const remove = [{ $identifier_key: 'id', $identifier_value: 1 }];
    const update = [{ $identifier_key: 'id', $identifier_value: 2, $new_object: { age: 3 } }];
    expectAccepted('attributes', attrs({ pets: { $update: update, $remove: remove, $add: add } }));
    expectAccepted('attributes', attrs({ pets: { $add: add, $update: update } }));
    expectAccepted('attributes', attrs({ pets: { $remove: remove, $add: add } }));
  });

  it.each([
    ['$remove of no array beside $add', { pets: { $add: [{ id: 3 }], $remove: { $identifier_key: 'id' } } }, 'pets.$remove: must be an array, got an object'],
    ['$update without $identifier_value before $add', { pets: { $update: [{ $identifier_key: 'id', $new_object: {} }], $add: [{ id: 3 }] } }, 'pets.$update[0]: needs $identifier_key (a non-empty string) and $identifier_value (a string, number or boolean)'],
    ['$add of a scalar beside $remove', { pets: { $remove: [], $add: [1] } }, 'pets.$add[0]: must be an object, got 1'],
    ['$add beside a plain key', { pets: { $add: [{ id: 3 }], name: 'x' } }, 'pets: an operation on an array of objects ($add) holds only $add, $remove and $update, not "name"'],
    ['$remove and $update beside add', { pets: { $update: [], add: ['x'], $remove: [] } }, 'pets: an operation on an array of objects ($remove, $update) holds only $add, $remove and $update, not "add"'],
  ])('refuses %s, naming the operation', (_, extra, message) => {
    const error = expectRejected('attributes', attrs(extra), /^pets/);
    expect(error.type).toBe(message);
    expect(error.type).not.toMatch(/nested key/);
  });

  it('bounds what $add adds at 100 KB as JSON, as the value it makes on an attribute that has none, whatever else the operation holds', () => {
    const objects = (n: number) => Array.from({ length: n }, (_, i) => ({ id: i, v: 'v'.repeat(200) }));
    expectAccepted('attributes', attrs({ pets: { $add: objects(300) } }));
    const updates = objects(300).map(({ id }) => ({ $identifier_key: 'id', $identifier_value: id, $new_object: { v: 'w'.repeat(200) } }));
    // the operation is over 100 KB, the value it makes is not (the emulator measures that)
    expectAccepted('attributes', attrs({ pets: { $add: objects(300), $update: updates } }));
    // the largest array of objects an attribute may be set to whole, added
    const fit: object[] = objects(480);
    while (JSON.stringify(fit).length > 100 * 1024 - 20) fit.pop();
    fit.push({ id: -1, v: 'x'.repeat(100 * 1024 - JSON.stringify(fit).length - JSON.stringify({ id: -1, v: '' }).length - 1) });
    expect(JSON.stringify(fit).length).toBe(100 * 1024);
    expect(JSON.stringify({ $add: fit }).length).toBeGreaterThan(100 * 1024);
    expectAccepted('attributes', attrs({ pets: fit }));
    expectAccepted('attributes', attrs({ pets: { $add: fit } }));
    expectRejected('attributes', attrs({ pets: { $add: objects(600) } }), /^pets: a nested value is at most 100 KB as JSON, and the objects \$add adds are over it/);
    expectRejected('attributes', attrs({ pets: { $remove: [{ $identifier_key: 'id', $identifier_value: 1 }], $add: objects(600) } }), /^pets: a nested value is at most 100 KB/);
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

  it('asks for a device_id of 8 to 255 bytes with push_token_import', () => {
    const token = (device_id: string) => ({ push_token_import: true, push_tokens: [{ app_id: 'a', token: 't', device_id }] });
    expectAccepted('attributes', token('12345678'));
    expectAccepted('attributes', token('d'.repeat(255)));
    expectRejected('attributes', token('1234567'), /^push_tokens\[0\]\.device_id: must be at least 8 bytes with push_token_import, got 7$/);
    expectRejected('attributes', token('d'.repeat(256)), /^push_tokens\[0\]\.device_id: must be at most 255 bytes with push_token_import, got 256$/);
    // bytes, not characters: 128 two-byte characters are 256 bytes
    expectRejected('attributes', token('é'.repeat(128)), /^push_tokens\[0\]\.device_id: must be at most 255 bytes/);
    expectAccepted('attributes', attrs({ push_tokens: [{ app_id: 'a', token: 't', device_id: 'short' }, { app_id: 'a', token: 'u', device_id: 'd'.repeat(300) }] }));
  });

  it('refuses email_subscription_info with its own error, whatever its value', () => {
    for (const value of [{ subscribed: true }, 'opted_in', null]) {
      expectRejected('attributes', attrs({ first_name: 'Ann', email_subscription_info: value }), /^email_subscription_info: is not a valid attribute$/);
    }
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

  it('keeps a documented display name as its IANA zone and an IANA name as it is; nothing else', () => {
    expect(storedTimeZone('Eastern Time (US & Canada)')).toBe('America/New_York');
    expect(storedTimeZone('International Date Line West')).toBe('Etc/GMT+12');
    expect(storedTimeZone('Singapore')).toBe('Asia/Singapore');
    expect(storedTimeZone('UTC')).toBe('Etc/UTC');
    expect(storedTimeZone('America/New_York')).toBe('America/New_York');
    for (const value of ['eastern time (us & canada)', 'Eastern Time', 'Mars/Base', '+02:00', '']) expect(storedTimeZone(value), value).toBeUndefined();
  });

  it("holds the whole Rails list, each display name's zone one the runtime knows", () => {
    expect(TIME_ZONE_DISPLAY_NAMES.size).toBe(154);
    for (const [name, zone] of TIME_ZONE_DISPLAY_NAMES) {
      expect(isTimeZoneName(zone), `${name} -> ${zone}`).toBe(true);
      expect(storedTimeZone(name)).toBe(zone);
    }
  });

  it('knows IANA zone names, not offsets or other spellings', () => {
    for (const zone of ['America/New_York', 'Europe/Oslo', 'UTC', 'Etc/GMT+5', 'US/Eastern', 'Asia/Kolkata', 'Asia/Calcutta', 'America/Port-au-Prince', 'EST5EDT']) {
      expect(isTimeZoneName(zone), zone).toBe(true);
    }
    // the runtime's zone data finds a name in any capitals, which the database does not spell so
    for (const zone of ['america/new_york', 'AMERICA/NEW_YORK', 'Europe/LONDON', 'US/EASTERN', 'Utc', '+01:00', 'Narnia', 'Mars/Olympus_Mons', '']) {
      expect(isTimeZoneName(zone), zone).toBe(false);
    }
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

  it("refuses an event's properties over 100 KB as JSON", () => {
    const properties = Object.fromEntries(Array.from({ length: 600 }, (_, i) => [`p${i}`, 'v'.repeat(200)]));
    expectRejected('events', event({ properties }), /^properties: must be at most 100 KB as JSON/);
  });

  it("refuses a purchase's properties over 50 KB as JSON, and takes them up to it", () => {
    // 200 products of 230-character skus take 49,414 bytes as JSON; 220 take 54,354
    const products = (n: number, sku: number) => Array.from({ length: n }, () => ({ sku: 's'.repeat(sku), n: 1 }));
    const size = (properties: object) => Buffer.byteLength(JSON.stringify(properties));
    const under = { products: products(200, 230) };
    const over = { products: products(220, 230) };
    expect(size(under)).toBeLessThanOrEqual(50 * 1024);
    expect(size(over)).toBeGreaterThan(50 * 1024);
    expectAccepted('purchases', purchase({ properties: under }));
    expectRejected('purchases', purchase({ properties: over }), /^properties: a purchase's properties are at most 50 KB as JSON/);
    expectAccepted('events', event({ properties: over }));
  });
});
