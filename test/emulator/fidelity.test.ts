// The rules decisions.md adds where the service's documentation decides (sections Wire format,
// Attributes, Events and purchases, Reading back), driven through the handler in-process.
import { afterEach, describe, expect, it } from 'vitest';
import { inspectProfiles } from '../../src/emulator/inspect.js';
import { testHandler, type TestHandler } from '../helpers/handler.js';

let h: TestHandler;
afterEach(() => h?.close());

const ALL_REFUSED = "Valid data must be provided in the 'attributes', 'events', or 'purchases' fields.";

function custom(...items: Record<string, unknown>[]): Record<string, unknown> {
  for (const item of items) {
    const r = h.track({ attributes: [{ external_id: 'u', ...item }] });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body.errors).toBeUndefined();
  }
  return h.user('u')?.custom_attributes;
}

describe('nested custom attributes', () => {
  it('refuses a nested value that breaks a rule, naming the attribute and the path, and keeps the old value', () => {
    h = testHandler();
    custom({ car: { make: 'Volvo' } });
    const r = h.track({
      attributes: [
        { external_id: 'u', car: { make: 'Saab', 'engine.size': 2 } },
        { external_id: 'u', car: { make: 'Saab', owner: { name: 'x'.repeat(256) } } },
        { external_id: 'u', car: { make: null } },
        { external_id: 'u', other: 1 },
      ],
    });
    expect(r.status).toBe(201);
    expect(r.body.errors).toEqual([
      { type: expect.stringMatching(/^car\["engine\.size"\]: nested keys must not contain "\."/), input_array: 'attributes', index: 0 },
      { type: expect.stringMatching(/^car\.owner\.name: nested strings are at most 255 characters/), input_array: 'attributes', index: 1 },
      { type: expect.stringMatching(/^car\.make: a nested value must not be null/), input_array: 'attributes', index: 2 },
    ]);
    expect(h.user('u')?.custom_attributes).toEqual({ car: { make: 'Volvo' }, other: 1 });
  });

  it('reads a date-only $time as midnight UTC, at the top level', () => {
    h = testHandler();
    expect(custom({ joined: { $time: '2020-05-28' } })).toEqual({ joined: '2020-05-28T00:00:00.000Z' });
  });
});

describe('operations on arrays of objects', () => {
  const pets = [
    { id: 1, type: 'dog', name: 'Rex', vet: { city: 'Oslo' } },
    { id: 2, type: 'cat', name: 'Tom' },
  ];

  it('$add appends, and starts the array when it is missing', () => {
    h = testHandler();
    expect(custom({ pets: { $add: [pets[0]] } })).toEqual({ pets: [pets[0]] });
    expect(custom({ pets: { $add: [pets[1]] } })).toEqual({ pets });
  });

  it('$remove drops every element whose key equals the value', () => {
    h = testHandler();
    custom({ pets: [...pets, { id: 1, type: 'fish' }] });
    expect(custom({ pets: { $remove: [{ $identifier_key: 'id', $identifier_value: 1 }] } })).toEqual({ pets: [pets[1]] });
  });

  const update = { $update: [
    { $identifier_key: 'id', $identifier_value: 1, $new_object: { name: 'Max', vet: { phone: '123' } } },
    { $identifier_key: 'id', $identifier_value: 9, $new_object: { name: 'Ghost' } },
  ] };

  it('$update with _merge_objects deep-merges $new_object into the matched elements and creates none', () => {
    h = testHandler();
    custom({ pets });
    expect(custom({ pets: update, _merge_objects: true })).toEqual({
      pets: [{ id: 1, type: 'dog', name: 'Max', vet: { city: 'Oslo', phone: '123' } }, pets[1]],
    });
  });

  it('$update without _merge_objects replaces each matched element whole with $new_object and creates none', () => {
    h = testHandler();
    custom({ pets: [...pets, { id: 1, type: 'fish' }] });
    expect(custom({ pets: update })).toEqual({
      pets: [{ name: 'Max', vet: { phone: '123' } }, pets[1], { name: 'Max', vet: { phone: '123' } }],
    });
    expect(custom({ pets: { $update: [{ $identifier_key: 'id', $identifier_value: 2, $new_object: { id: 2, type: 'cat' } }] }, _merge_objects: false })).toEqual({
      pets: [{ name: 'Max', vet: { phone: '123' } }, { id: 2, type: 'cat' }, { name: 'Max', vet: { phone: '123' } }],
    });
  });

  it('$remove and $update on a missing attribute change nothing', () => {
    h = testHandler();
    expect(
      custom(
        { kept: 1 },
        { pets: { $remove: [{ $identifier_key: 'id', $identifier_value: 1 }] } },
        { pets: { $update: [{ $identifier_key: 'id', $identifier_value: 1, $new_object: { a: 1 } }] } },
      ),
    ).toEqual({ kept: 1 });
  });

  it('refuses a malformed operation as a minor error and leaves the array alone', () => {
    h = testHandler();
    custom({ pets });
    const r = h.track({ attributes: [{ external_id: 'u', pets: { $remove: [{ $identifier_key: 'id' }] } }] });
    expect(r.body.errors?.[0].type ?? r.body.errors).toMatch(/^pets\.\$remove\[0\]: needs \$identifier_key/);
    expect(h.user('u')?.custom_attributes).toEqual({ pets });
  });

  it('add and remove in one object apply both, the removals first', () => {
    h = testHandler();
    custom({ tags: ['a', 'b', 'c'] });
    expect(custom({ tags: { add: ['d', 'b'], remove: ['b', 'c'] } })).toEqual({ tags: ['a', 'd', 'b'] });
  });
});

describe('events and purchases', () => {
  it('refuses reserved property names and long property strings', () => {
    h = testHandler();
    const event = (properties: Record<string, unknown>) => ({ external_id: 'u', name: 'e', time: '2024-03-07T10:00:00Z', properties });
    const r = h.track({ events: [event({ time: 'x' }), event({ event_name: 'x' }), event({ note: 'x'.repeat(256) }), event({ ok: 1 })] });
    expect(r.status).toBe(201);
    expect(r.body.errors.map((e: { type: string }) => e.type.split(':')[0])).toEqual(['properties.time', 'properties.event_name', 'properties.note']);
    expect(r.body.events_processed).toBe(1);
  });

  it('records a time more than a minute ahead at the server time, and a near one as sent', () => {
    h = testHandler();
    const before = Date.now();
    const ahead = new Date(before + 3_600_000).toISOString();
    const near = new Date(before + 20_000).toISOString();
    h.track({
      events: [{ external_id: 'u', name: 'future', time: ahead }, { external_id: 'u', name: 'near', time: near }],
      purchases: [{ external_id: 'u', product_id: 'p', currency: 'USD', price: 1, time: '2999-01-01T00:00:00Z' }],
    });
    const id = h.store.profileByExternalId('u')!.id;
    const [future, close] = h.store.eventsOf(id);
    expect(Date.parse(future.time)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(future.time)).toBeLessThanOrEqual(Date.now());
    expect(close.time).toBe(near);
    expect(Date.parse(h.store.purchasesOf(id)[0].time)).toBeLessThanOrEqual(Date.now());
  });

  it('counts a purchase of quantity X as X purchases in the export and in inspect', () => {
    h = testHandler();
    const buy = (quantity: number) => ({ external_id: 'u', product_id: 'p', currency: 'usd', price: 2, quantity, time: '2024-03-07T10:00:00Z' });
    const r = h.track({ purchases: [buy(3), buy(2)] });
    expect(r.body.purchases_processed).toBe(2);
    expect(h.user('u')?.purchases).toEqual([{ name: 'p', first: '2024-03-07T10:00:00.000Z', last: '2024-03-07T10:00:00.000Z', count: 5 }]);
    expect(inspectProfiles(h.store, { externalId: 'u' })[0].purchases).toEqual([expect.objectContaining({ name: 'p', count: 5 })]);
  });
});

describe('standard fields', () => {
  it('keeps the fields beyond the spec as profile fields, not custom attributes', () => {
    h = testHandler();
    const fields = {
      current_location: { latitude: 59.91, longitude: 10.75 },
      date_of_first_session: '2024-03-07T12:00:00+02:00',
      email_open_tracking_disabled: true,
      email_click_tracking_disabled: false,
      image_url: 'https://example.com/a.png',
      facebook: { id: 'fb1', num_friends: 3 },
      twitter: { screen_name: 'ann' },
    };
    expect(custom({ ...fields, plan: 'pro' })).toEqual({ plan: 'pro' });
    expect(h.user('u')).toMatchObject({ ...fields, date_of_first_session: '2024-03-07T10:00:00.000Z' });
  });

  it('refuses a current_location out of range', () => {
    h = testHandler();
    const r = h.track({ attributes: [{ external_id: 'u', current_location: { latitude: 0, longitude: 181 } }, { external_id: 'u', a: 1 }] });
    expect(r.body.errors).toEqual([{ type: expect.stringMatching(/^current_location: /), input_array: 'attributes', index: 0 }]);
  });

  it('sets time_zone only to an IANA zone name, logging any other value', () => {
    const lines: string[] = [];
    h = testHandler({ log: (line) => lines.push(line) });
    custom({ time_zone: 'America/New_York' }, { time_zone: 'Mars/Base' }, { time_zone: '+02:00' }, { time_zone: 'AMERICA/NEW_YORK' }, { time_zone: 'Europe/LONDON' });
    expect(h.user('u')?.time_zone).toBe('America/New_York');
    expect(lines).toEqual([
      expect.stringContaining('time_zone "Mars/Base" is not an IANA time zone name'),
      expect.stringContaining('"+02:00"'),
      expect.stringContaining('"AMERICA/NEW_YORK"'),
      expect.stringContaining('"Europe/LONDON"'),
    ]);
  });

  it('takes any other time_zone or country with no error: the zone is not set, the country kept as null (decisions.md)', () => {
    const lines: string[] = [];
    h = testHandler({ log: (line) => lines.push(line) });
    custom({ time_zone: 'Europe/Oslo', country: 'NO' });
    for (const value of ['', 5, true, { a: 1 }, 'x'.repeat(256)]) {
      const plan = JSON.stringify(value).slice(0, 20);
      const r = h.track({ attributes: [{ external_id: 'u', time_zone: value, country: value, plan }] });
      expect(r, JSON.stringify(value)).toEqual({ status: 201, body: { message: 'success', attributes_processed: 1 } });
      expect(h.user('u')).toMatchObject({ time_zone: 'Europe/Oslo', country: null, custom_attributes: { plan } });
      custom({ country: 'NO' });
    }
    expect(lines.filter((line) => line.includes('time_zone'))).toHaveLength(5);
  });

  it('stores country as an upper-case alpha-2 code, from a code in any case or a well-known name; else null', () => {
    h = testHandler();
    custom({ country: 'no' });
    expect(h.user('u')?.country).toBe('NO');
    custom({ country: 'United States' });
    expect(h.user('u')?.country).toBe('US');
    custom({ country: 'Narnia' });
    expect(h.user('u')).toHaveProperty('country', null);
  });

  it('gives a push token sent without device_id a generated one, stored and exported', () => {
    h = testHandler();
    custom({ push_tokens: [{ app_id: 'app', token: 't1' }, { app_id: 'app', token: 't2', device_id: 'given' }] });
    const [first, second] = h.user('u')?.push_tokens;
    expect(first.device_id).toMatch(/^[0-9a-f]{32}$/);
    expect(second.device_id).toBe('given');
    custom({ push_tokens: [{ app_id: 'app', token: 't1' }] });
    expect(h.user('u')?.push_tokens[0].device_id).toBe(first.device_id);
  });

  it('refuses a device_id under 8 bytes with push_token_import', () => {
    h = testHandler();
    const r = h.track({ attributes: [{ push_token_import: true, push_tokens: [{ app_id: 'a', token: 't', device_id: 'abc' }] }] });
    expect(r.body.errors[0].type).toMatch(/^push_tokens\[0\]\.device_id: must be at least 8 bytes/);
  });
});

describe('a request whose every item is refused', () => {
  it('answers 400 with the documented message and the minor error entries, counts 0', () => {
    h = testHandler();
    const r = h.track({
      attributes: [{ external_id: 'u', dob: 'yesterday' }],
      events: [{ external_id: 'u', name: 'e' }],
    });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({
      message: ALL_REFUSED,
      attributes_processed: 0,
      events_processed: 0,
      errors: [
        { type: expect.stringMatching(/^dob: /), input_array: 'attributes', index: 0 },
        { type: expect.stringMatching(/^time: /), input_array: 'events', index: 0 },
      ],
    });
    expect(h.store.counts().profiles).toBe(0);
  });

  it('still answers 201 when one item is valid, and for a request with no items', () => {
    h = testHandler();
    expect(h.track({ attributes: [{ external_id: 'u', dob: 'x' }, { external_id: 'u', a: 1 }] }).status).toBe(201);
    expect(h.track({ attributes: [] })).toEqual({ status: 201, body: { message: 'success', attributes_processed: 0 } });
  });
});

describe('export limits', () => {
  it('takes at most 50 external_ids and 50 user_aliases (fatal 400 beyond)', () => {
    h = testHandler();
    const ids = Array.from({ length: 51 }, (_, i) => `u${i}`);
    const r = h.post('/users/export/ids', { external_ids: ids });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ message: 'external_ids: at most 50 in one request, got 51', errors: ['external_ids: at most 50 in one request, got 51'] });
    const aliases = ids.map((id) => ({ alias_name: id, alias_label: 'l' }));
    expect(h.post('/users/export/ids', { user_aliases: aliases }).status).toBe(400);
    expect(h.post('/users/export/ids', { external_ids: ids.slice(1), user_aliases: aliases.slice(1) }).status).toBe(201);
  });

  it('looks a repeated identifier up once', () => {
    h = testHandler();
    h.track({ attributes: [{ external_id: 'u', a: 1 }] });
    const calls: string[] = [];
    const lookup = h.store.idByExternalId.bind(h.store);
    h.store.idByExternalId = (id: string) => {
      calls.push(id);
      return lookup(id);
    };
    const body = h.post('/users/export/ids', { external_ids: ['u', 'u', 'nobody', 'u', 'nobody'] }).body as Record<string, any>;
    expect(calls).toEqual(['u', 'nobody']);
    expect(body.users.map((u: { external_id: string }) => u.external_id)).toEqual(['u']);
    expect(body.invalid_user_ids).toEqual(['nobody']);
  });

  it('answers in pieces, one identifier at a time, with custom attributes as stored', () => {
    h = testHandler();
    h.track({ attributes: [{ external_id: 'a', x: 'é"\\' }, { external_id: 'b', y: [1, 2] }] });
    const body = h.post('/users/export/ids', { external_ids: ['a', 'b'], fields_to_export: ['external_id', 'custom_attributes'] }).body;
    expect(body).toEqual({
      message: 'success',
      users: [{ external_id: 'a', custom_attributes: { x: 'é"\\' } }, { external_id: 'b', custom_attributes: { y: [1, 2] } }],
      invalid_user_ids: [],
    });
  });
});

describe('operator hints', () => {
  it('logs how many items came, the active limit and the flag that would allow them', () => {
    const lines: string[] = [];
    h = testHandler({ log: (line) => lines.push(line) });
    const items = Array.from({ length: 75 }, (_, i) => ({ external_id: `u${i}`, a: 1 }));
    expect(h.track({ attributes: items }).status).toBe(400);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('refused a request of 75 items (attributes 75, events 0, purchases 0)');
    expect(lines[0]).toContain('mau (at most 50 items a request across the arrays)');
    expect(lines[0]).toContain('--limits legacy or --max-total 75');
  });

  it('names --max-per-array under the legacy profile', () => {
    const lines: string[] = [];
    h = testHandler({ log: (line) => lines.push(line), limits: 'legacy' });
    const items = Array.from({ length: 80 }, (_, i) => ({ external_id: `u${i}`, name: 'e', time: '2024-03-07T10:00:00Z' }));
    expect(h.track({ events: items }).status).toBe(400);
    expect(lines[0]).toMatch(/legacy \(at most 75 items in each array\); start the emulator with --max-per-array 80 to allow it$/);
  });
});
