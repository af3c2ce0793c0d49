// What real integrations send and the service's docs show, sent to the handler in-process and read
// back through the export (or inspect, for what a purchase carries): purchase property types, several
// operations on an array of objects in one object, $update with and without _merge_objects, the
// bounds of an imported device_id and of nested times, U.S. numbers without a country code, nested
// keys, display time zones and email_subscription_info (decisions.md "Identifying the user",
// "Attributes", "Events and purchases").
import { afterEach, describe, expect, it } from 'vitest';
import { inspectProfiles } from '../../src/emulator/inspect.js';
import { TIME_ZONE_DISPLAY_NAMES } from '../../src/model/time-zone-names.js';
import { testHandler, type TestHandler } from '../helpers/handler.js';

let h: TestHandler;
afterEach(() => h?.close());

const TIME = '2013-07-16T19:20:30+01:00';
const purchase = (properties: Record<string, unknown>) => ({ external_id: 'u', product_id: 'Completed Order', currency: 'USD', price: 219.98, time: TIME, properties });
const purchaseLog = () => inspectProfiles(h.store, { externalId: 'u' })[0].purchase_log as { properties?: unknown }[];

describe('purchase properties', () => {
  it("stores the docs' own examples: a boolean, and an order-level array of products", () => {
    h = testHandler();
    const products = [
      { name: 'Monitor', category: 'Gaming', product_amount: 19.99 },
      { name: 'Gaming Keyboard', category: 'Gaming ', product_amount: 199.99 },
    ];
    const r = h.track({ purchases: [purchase({ number: 2, sharpened: true }), purchase({ products })] });
    expect(r).toEqual({ status: 201, body: { message: 'success', purchases_processed: 2 } });
    expect(purchaseLog().map((p) => p.properties)).toEqual([{ number: 2, sharpened: true }, { products }]);
    expect(h.user('u')?.purchases).toEqual([{ name: 'Completed Order', first: '2013-07-16T18:20:30.000Z', last: '2013-07-16T18:20:30.000Z', count: 2 }]);
  });

  it('stores what Segment and Jitsu send (a boolean, an object, a time, a null), and refuses a purchase over 50 KB', () => {
    h = testHandler();
    const segment = { is_gift: true, shipping: { method: 'ground', cost: 4.5 }, ordered_at: '2024-03-07T10:00:00Z' };
    const big = { products: Array.from({ length: 220 }, () => ({ sku: 's'.repeat(230), n: 1 })) };
    const r = h.track({ purchases: [purchase(segment), purchase({ coupon: null }), purchase(big)] });
    expect(r.status).toBe(201);
    expect(r.body.errors).toEqual([{ type: "properties: a purchase's properties are at most 50 KB as JSON", input_array: 'purchases', index: 2 }]);
    expect(purchaseLog().map((p) => p.properties)).toEqual([segment, { coupon: null }]);
  });
});

describe('operations on an array of objects, combined in one object', () => {
  const ci = [{ id: 'a', v: 1 }, { id: 'b', v: 2 }];

  it("applies $add, then $remove, then $update, whatever order they are written in (RudderStack's shape)", () => {
    h = testHandler();
    h.track({ attributes: [{ external_id: 'u', ci_objects: ci }] });
    const r = h.track({
      attributes: [{
        external_id: 'u',
        ci_objects: {
          $update: [{ $identifier_key: 'id', $identifier_value: 'c', $new_object: { id: 'c', v: 30 } }],
          $remove: [{ $identifier_key: 'id', $identifier_value: 'a' }],
          $add: [{ id: 'c', v: 3 }],
        },
      }],
    });
    expect(r).toEqual({ status: 201, body: { message: 'success', attributes_processed: 1 } });
    // the element $add appended is there for $update to change, and $remove took "a" out
    expect(h.user('u')?.custom_attributes).toEqual({ ci_objects: [{ id: 'b', v: 2 }, { id: 'c', v: 30 }] });
  });

  it('starts a missing array with $add before $remove and $update run', () => {
    h = testHandler();
    h.track({
      attributes: [{
        external_id: 'u',
        _merge_objects: true,
        pets: { $update: [{ $identifier_key: 'id', $identifier_value: 1, $new_object: { age: 4 } }], $add: [{ id: 1, age: 3 }, { id: 2 }], $remove: [{ $identifier_key: 'id', $identifier_value: 2 }] },
      }],
    });
    expect(h.user('u')?.custom_attributes).toEqual({ pets: [{ id: 1, age: 4 }] });
  });

  it('refuses a malformed combined operation naming the operation, never calling $add a nested key, and leaves the array alone', () => {
    h = testHandler();
    h.track({ attributes: [{ external_id: 'u', ci_objects: ci }] });
    const r = h.track({
      attributes: [
        { external_id: 'u', ci_objects: { $add: [{ id: 'c' }], $remove: { $identifier_key: 'id' } } },
        { external_id: 'u', ci_objects: { $add: [{ id: 'c' }], $update: [{ $identifier_key: 'id', $identifier_value: 'a' }] } },
        { external_id: 'u', ci_objects: { $add: [{ id: 'c' }], name: 'x' } },
        { external_id: 'u', ci_objects: { $remove: [{ $identifier_key: 'id', $identifier_value: 'a' }], $add: [{ 'a b': 1 }] } },
      ],
    });
    expect(r.status).toBe(400);
    expect(r.body.errors.map((e: { type: string }) => e.type)).toEqual([
      'ci_objects.$remove: must be an array, got an object',
      'ci_objects.$update[0]: needs $new_object (an object: what the matched elements become)',
      'ci_objects: an operation on an array of objects ($add) holds only $add, $remove and $update, not "name"',
      'ci_objects.$add[0]["a b"]: nested keys must not contain spaces',
    ]);
    for (const { type } of r.body.errors) expect(type).not.toMatch(/nested keys must not start with \$|undefined/);
    expect(h.user('u')?.custom_attributes).toEqual({ ci_objects: ci });
  });
});

describe('an update that would take a stored value over 100 KB', () => {
  // 380 elements of about 220 bytes: about 84 KB as JSON, under the limit; 120 more take it over
  const elements = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ id: from + i, note: 'n'.repeat(200) }));

  const tooLarge = (attribute: string, index: number) => ({
    type: `${attribute}: a nested value is at most 100 KB as JSON, and this update would take the value the profile holds over it`,
    input_array: 'attributes',
    index,
  });

  it('refuses the item with a minor error naming the attribute, where the service drops the update silently ($add, $update, a merge); the item changes nothing', () => {
    const lines: string[] = [];
    h = testHandler({ log: (line) => lines.push(line) });
    const pets = elements(0, 380);
    const profile = { make: 'x', notes: Object.fromEntries(elements(0, 380).map(({ id, note }) => [`k${id}`, note])) };
    expect(h.track({ attributes: [{ external_id: 'u', pets, profile }] }).body.errors).toBeUndefined();
    const r = h.track({
      attributes: [
        { external_id: 'u', plan: 'a', pets: { $add: elements(1000, 120) } },
        { external_id: 'u', plan: 'b', pets: { $update: [{ $identifier_key: 'id', $identifier_value: 1, $new_object: { id: 1, notes: elements(0, 120) } }] } },
        { external_id: 'v', plan: 'c' },
        { external_id: 'u', plan: 'd', first_name: 'Ann', _merge_objects: true, profile: { more: Object.fromEntries(elements(0, 120).map(({ id, note }) => [`m${id}`, note])) } },
      ],
      events: [{ external_id: 'u', name: 'e', time: '2024-03-07T10:00:00Z' }],
    });
    expect(r).toEqual({
      status: 201,
      body: { message: 'success', attributes_processed: 1, events_processed: 1, errors: [tooLarge('pets', 0), tooLarge('pets', 1), tooLarge('profile', 3)] },
    });
    // nothing of the refused items: not their other attributes, not their standard fields
    expect(h.user('u')?.custom_attributes).toEqual({ pets, profile });
    expect(h.user('u')?.first_name).toBeUndefined();
    expect(h.user('v')?.custom_attributes).toEqual({ plan: 'c' });
    expect(lines).toEqual([
      'attributes: "pets" would be over 100 KB as JSON after the update of attributes[0]; the item is refused',
      'attributes: "pets" would be over 100 KB as JSON after the update of attributes[1]; the item is refused',
      'attributes: "profile" would be over 100 KB as JSON after the update of attributes[3]; the item is refused',
    ]);
    // a request whose every item is refused so is answered as one whose items broke their own rules
    const all = h.track({ attributes: [{ external_id: 'u', pets: { $add: elements(1000, 120) } }] });
    expect(all).toEqual({
      status: 400,
      body: { message: "Valid data must be provided in the 'attributes', 'events', or 'purchases' fields.", attributes_processed: 0, errors: [tooLarge('pets', 0)] },
    });
    // a new profile too: `$update` grows each element `$add` adds; none is made for the item, by any identifier
    const big = { id: 1, ...Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`n${i}`, 'n'.repeat(250)])) };
    const growing = { $add: Array.from({ length: 50 }, () => ({ id: 1 })), $update: [{ $identifier_key: 'id', $identifier_value: 1, $new_object: big }] };
    const identified = [
      { external_id: 'new-e' },
      { email: 'new@example.com' },
      { phone: '+14155550123' },
      { user_alias: { alias_name: 'a1', alias_label: 'crm' }, _update_existing_only: false },
      { push_token_import: true, push_tokens: [{ app_id: 'app', token: 'tok-1' }] },
    ];
    for (const who of identified) {
      const r = h.track({ attributes: [{ ...who, plan: 'x', pets: growing }] });
      expect(r.status, JSON.stringify(who)).toBe(400);
      expect(r.body.errors).toEqual([tooLarge('pets', 0)]);
    }
    expect(h.users({ external_ids: ['new-e'], email_address: 'new@example.com' })).toEqual([]);
    expect(h.users({ phone: '+14155550123', user_aliases: [{ alias_name: 'a1', alias_label: 'crm' }] })).toEqual([]);
    expect(h.store.profileCount()).toBe(2); // u and v, from before
    // with one refused as it is checked, the other by what the profile holds: in the body's order
    const both = h.track({ attributes: [{ external_id: 'u', pets: { $add: elements(1000, 120) } }, { external_id: 'u', email: 'not an email' }] });
    expect(both.status).toBe(400);
    expect(both.body.errors).toEqual([tooLarge('pets', 0), { type: expect.stringMatching(/^email: /), input_array: 'attributes', index: 1 }]);
    // within the limit, the same operations apply
    h.track({ attributes: [{ external_id: 'u', pets: { $add: elements(1000, 5), $remove: [{ $identifier_key: 'id', $identifier_value: 0 }] } }] });
    expect((h.user('u')?.custom_attributes.pets as unknown[]).length).toBe(384);
  });
});

describe('$update', () => {
  const pets = [{ id: 1, name: 'Rex', vet: { city: 'Oslo' } }, { id: 2, name: 'Tom' }];
  const update = { $update: [{ $identifier_key: 'id', $identifier_value: 1, $new_object: { vet: { phone: '123' } } }] };

  it('replaces the matched element whole without _merge_objects, as the docs warn', () => {
    h = testHandler();
    h.track({ attributes: [{ external_id: 'u', pets }] });
    h.track({ attributes: [{ external_id: 'u', pets: update }] });
    expect(h.user('u')?.custom_attributes).toEqual({ pets: [{ vet: { phone: '123' } }, pets[1]] });
  });

  it('deep-merges into the matched element with _merge_objects', () => {
    h = testHandler();
    h.track({ attributes: [{ external_id: 'u', pets }] });
    h.track({ attributes: [{ external_id: 'u', pets: update, _merge_objects: true }] });
    expect(h.user('u')?.custom_attributes).toEqual({ pets: [{ id: 1, name: 'Rex', vet: { city: 'Oslo', phone: '123' } }, pets[1]] });
  });
});

describe('push token import', () => {
  it('takes a device_id of 8 to 255 bytes and refuses 7 or 256', () => {
    h = testHandler();
    const item = (token: string, device_id: string) => ({ push_token_import: true, push_tokens: [{ app_id: 'app', token, device_id }] });
    const r = h.track({ attributes: [item('t1', 'd'.repeat(255)), item('t2', 'd'.repeat(256)), item('t3', 'é'.repeat(128)), item('t4', 'd'.repeat(7))] });
    expect(r.body.errors).toEqual([
      { type: 'push_tokens[0].device_id: must be at most 255 bytes with push_token_import, got 256', input_array: 'attributes', index: 1 },
      { type: 'push_tokens[0].device_id: must be at most 255 bytes with push_token_import, got 256', input_array: 'attributes', index: 2 },
      { type: 'push_tokens[0].device_id: must be at least 8 bytes with push_token_import, got 7', input_array: 'attributes', index: 3 },
    ]);
    expect(h.store.pushToken('app', 't1')?.deviceId).toBe('d'.repeat(255));
    for (const token of ['t2', 't3', 't4']) expect(h.store.pushToken('app', token)).toBeUndefined();
  });
});

describe('nested values', () => {
  it('stores a nested $time in the years 0 to 3000 and refuses one outside, naming the path', () => {
    h = testHandler();
    const r = h.track({
      attributes: [
        { external_id: 'u', dates: { last: { $time: '3000-12-31T23:59:59Z' }, first: { $time: '0000-01-01' } } },
        { external_id: 'u', later: { when: { $time: '3001-01-01' } } },
        { external_id: 'u', stays: [{ hotel: 'Ritz', at: { $time: '3000-12-31T23:00:00-05:00' } }] },
      ],
    });
    expect(r.body.errors.map((e: { type: string; index: number }) => [e.index, e.type])).toEqual([
      [1, 'later.when: $time must be in the years 0 to 3000 (UTC), got "3001-01-01"'],
      [2, 'stays[0].at: $time must be in the years 0 to 3000 (UTC), got "3000-12-31T23:00:00-05:00"'],
    ]);
    expect(h.user('u')?.custom_attributes).toEqual({ dates: { last: { $time: '3000-12-31T23:59:59Z' }, first: { $time: '0000-01-01' } } });
  });

  it('refuses a nested key with a space, at any depth, and stores nothing of it', () => {
    h = testHandler();
    const r = h.track({ attributes: [{ external_id: 'u', obj: { 'a b': 1 } }, { external_id: 'u', obj: { a: [{ 'x y': 1 }] } }, { external_id: 'u', 'top level name': 1 }] });
    expect(r.body.errors.map((e: { type: string }) => e.type)).toEqual([
      'obj["a b"]: nested keys must not contain spaces',
      'obj.a[0]["x y"]: nested keys must not contain spaces',
    ]);
    // a custom attribute's own name may hold a space: the rule is the nested keys'
    expect(h.user('u')?.custom_attributes).toEqual({ 'top level name': 1 });
  });
});

describe('phone numbers without a country code', () => {
  it('reads a valid 10-digit U.S. number as U.S., as an identifier and as a field, and stores it in E.164', () => {
    h = testHandler();
    const r = h.track({
      attributes: [{ phone: '4155552671', first_name: 'Ann' }, { external_id: 'u', phone: '(415) 555-2672' }, { external_id: 'v', phone: '2071838750' }],
      events: [{ phone: '415.555.2671', name: 'played', time: TIME }],
    });
    expect(r.body.errors).toEqual([{ type: 'phone: is not a valid phone number, got "2071838750"', input_array: 'attributes', index: 2 }]);
    expect(h.users({ phone: '+14155552671' })).toEqual([expect.objectContaining({ phone: '+14155552671', first_name: 'Ann', custom_events: [expect.objectContaining({ name: 'played', count: 1 })] })]);
    expect(h.users({ phone: '4155552671' })).toHaveLength(1);
    expect(h.user('u')?.phone).toBe('+14155552672');
    expect(h.user('v')).toBeUndefined();
  });
});

describe('time_zone', () => {
  it('keeps a documented display name as its IANA zone, an IANA name as sent, and sets nothing else', () => {
    const lines: string[] = [];
    h = testHandler({ log: (line) => lines.push(line) });
    const zoneAfter = (time_zone: string) => {
      expect(h.track({ attributes: [{ external_id: 'u', time_zone }] }).status).toBe(201);
      return h.user('u')?.time_zone;
    };
    expect(zoneAfter('Eastern Time (US & Canada)')).toBe('America/New_York');
    expect(zoneAfter('Europe/Oslo')).toBe('Europe/Oslo');
    expect(zoneAfter('eastern time (us & canada)')).toBe('Europe/Oslo');
    expect(zoneAfter("Nuku'alofa")).toBe('Pacific/Tongatapu');
    expect(zoneAfter('UTC')).toBe('Etc/UTC');
    expect(lines).toEqual([expect.stringContaining('time_zone "eastern time (us & canada)" is not an IANA time zone name nor a documented display name; not set')]);
  });

  it('sets every display name of the table to its zone', () => {
    h = testHandler();
    const names = [...TIME_ZONE_DISPLAY_NAMES.keys()];
    for (let i = 0; i < names.length; i += 50) {
      const items = names.slice(i, i + 50).map((time_zone, j) => ({ external_id: `z${i + j}`, time_zone }));
      expect(h.track({ attributes: items }).body.errors).toBeUndefined();
    }
    const users = names.map((_, i) => h.user(`z${i}`)?.time_zone);
    expect(users).toEqual([...TIME_ZONE_DISPLAY_NAMES.values()]);
  });
});

describe('email_subscription_info', () => {
  it('refuses an item carrying it with its own minor error, and stores none of the item', () => {
    h = testHandler();
    const r = h.track({
      attributes: [{ external_id: 'u', first_name: 'Ann', email_subscription_info: { subscribed: true } }, { external_id: 'u', plan: 'pro' }],
    });
    expect(r).toEqual({
      status: 201,
      body: { message: 'success', attributes_processed: 1, errors: [{ type: 'email_subscription_info: is not a valid attribute', input_array: 'attributes', index: 0 }] },
    });
    expect(h.user('u')?.custom_attributes).toEqual({ plan: 'pro' });
    expect(h.user('u')).not.toHaveProperty('first_name');
  });
});
