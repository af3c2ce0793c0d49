// Identity resolution, each rule checked by reading the profile back (spec 2.3, 4; decisions.md).
import { afterEach, describe, expect, it } from 'vitest';
import { testHandler, type TestHandler } from '../helpers/handler.js';

let h: TestHandler;
afterEach(() => h?.close());

const alias = { alias_name: 'anon-1', alias_label: 'crm' };

describe('primary identifiers', () => {
  it('creates a profile for a new external_id and updates it afterwards', () => {
    h = testHandler();
    h.track({ attributes: [{ external_id: 'u1', a: 1 }] });
    h.track({ attributes: [{ external_id: 'u1', b: 2 }] });
    expect(h.user('u1')?.custom_attributes).toEqual({ a: 1, b: 2 });
    expect(h.store.counts().profiles).toBe(1);
  });

  it('gives every profile a service_id, and a service_id finds it', () => {
    h = testHandler();
    h.track({ attributes: [{ external_id: 'u1', a: 1 }] });
    const serviceId = h.user('u1')?.service_id as string;
    expect(serviceId).toMatch(/^[0-9a-f]{24}$/);
    expect(h.track({ attributes: [{ service_id: serviceId, a: 2 }] }).body.attributes_processed).toBe(1);
    expect(h.user('u1')?.custom_attributes).toEqual({ a: 2 });
  });

  it('skips a service_id that names no profile, silently', () => {
    h = testHandler();
    const r = h.track({ attributes: [{ service_id: 'ffffffffffffffffffffffff', a: 1 }] });
    expect(r.body).toEqual({ message: 'success', attributes_processed: 1 });
    expect(h.store.counts().profiles).toBe(0);
  });

  it('with _update_existing_only true, does not create a profile for a new external_id but counts the item', () => {
    h = testHandler();
    expect(h.track({ attributes: [{ external_id: 'u1', _update_existing_only: true, a: 1 }] }).body.attributes_processed).toBe(1);
    expect(h.store.counts().profiles).toBe(0);
    h.track({ attributes: [{ external_id: 'u1', a: 1 }] });
    h.track({ attributes: [{ external_id: 'u1', _update_existing_only: true, a: 2 }] });
    expect(h.user('u1')?.custom_attributes).toEqual({ a: 2 });
  });

  it('does not create an alias-only user by default, and does with _update_existing_only false', () => {
    h = testHandler();
    h.track({ attributes: [{ user_alias: alias, a: 1 }] });
    expect(h.users({ user_aliases: [alias] })).toEqual([]);
    h.track({ attributes: [{ user_alias: alias, _update_existing_only: false, a: 1 }] });
    const [u] = h.users({ user_aliases: [alias] });
    expect(u.user_aliases).toEqual([alias]);
    expect(u.external_id).toBeUndefined();
    expect(u.custom_attributes).toEqual({ a: 1 });
    h.track({ attributes: [{ user_alias: alias, a: 2 }] });
    expect(h.users({ user_aliases: [alias] })[0].custom_attributes).toEqual({ a: 2 });
  });

  it('refuses an item with two primary identifiers as a minor error', () => {
    h = testHandler();
    const r = h.track({ attributes: [{ external_id: 'u1', user_alias: alias, a: 1 }] });
    expect(r.body.errors[0]).toMatchObject({ input_array: 'attributes', index: 0 });
    expect(h.store.counts().profiles).toBe(0);
  });
});

describe('email', () => {
  it('creates an email-only profile with the email set and no alias when none holds it', () => {
    h = testHandler();
    h.track({ attributes: [{ email: 'Ann@Example.com', first_name: 'Ann' }] });
    const [u] = h.users({ email_address: 'ann@example.com' });
    expect(u.email).toBe('Ann@Example.com');
    expect(u.first_name).toBe('Ann');
    expect(u.user_aliases).toEqual([]);
    expect(u.external_id).toBeUndefined();
  });

  it('keeps the email as spelt when an event or a purchase creates the profile, as an attributes item does', () => {
    h = testHandler();
    h.track({
      events: [{ email: 'Ev@Example.com', name: 'e', time: '2024-01-01T00:00:00Z' }],
      purchases: [{ email: 'Pu@Example.com', product_id: 'p', currency: 'USD', price: 1, time: '2024-01-01T00:00:00Z' }],
    });
    expect(h.users({ email_address: 'ev@example.com' })[0].email).toBe('Ev@Example.com');
    expect(h.users({ email_address: 'PU@example.com' })[0].email).toBe('Pu@Example.com');
    // a later event in another spelling finds the profile and keeps the first
    h.track({ events: [{ email: 'EV@EXAMPLE.COM', name: 'e', time: '2024-01-02T00:00:00Z' }] });
    expect(h.store.counts().profiles).toBe(2);
    expect(h.users({ email_address: 'ev@example.com' })[0].email).toBe('Ev@Example.com');
  });

  it('keeps the stored spelling of an email that only named the user', () => {
    h = testHandler();
    h.track({ attributes: [{ external_id: 'u1', email: 'Shared@X.com' }] });
    h.track({ attributes: [{ email: 'shared@X.COM', hit: 'yes' }] });
    expect(h.user('u1')).toMatchObject({ email: 'Shared@X.com', custom_attributes: { hit: 'yes' } });
  });

  it('finds a push-import profile by the email it holds rather than creating another', () => {
    h = testHandler();
    h.track({ attributes: [{ push_token_import: true, email: 'imp@x.com', push_tokens: [{ app_id: 'a', token: 't' }] }] });
    h.track({ attributes: [{ email: 'imp@x.com', v: 1 }] });
    expect(h.store.counts().profiles).toBe(1);
    expect(h.users({ email_address: 'imp@x.com' })[0].custom_attributes).toEqual({ v: 1 });
  });

  it('matches email case-insensitively', () => {
    h = testHandler();
    h.track({ attributes: [{ external_id: 'u1', email: 'ann@example.com' }] });
    h.track({ attributes: [{ email: 'ANN@EXAMPLE.COM', a: 1 }] });
    expect(h.user('u1')?.custom_attributes).toEqual({ a: 1 });
    expect(h.store.counts().profiles).toBe(1);
  });

  it('updates the most recently updated profile with an external_id among those sharing an email', () => {
    h = testHandler();
    h.track({ attributes: [{ external_id: 'older', email: 's@x.com' }] });
    h.track({ attributes: [{ external_id: 'newer', email: 's@x.com' }] });
    h.track({ attributes: [{ email: 'only@x.com' }] });
    h.track({ attributes: [{ email: 'only@x.com', email_subscribe: 'subscribed' }] });
    // a profile with the email but no external_id, updated last, is passed over
    h.track({ attributes: [{ user_alias: alias, _update_existing_only: false, email: 's@x.com' }] });
    h.track({ attributes: [{ email: 's@x.com', picked: true }] });
    expect(h.user('newer')?.custom_attributes).toEqual({ picked: true });
    expect(h.user('older')?.custom_attributes).toEqual({});
    h.track({ attributes: [{ external_id: 'older', touched: 1 }] });
    h.track({ attributes: [{ email: 's@x.com', picked: 2 }] });
    expect(h.user('older')?.custom_attributes).toEqual({ touched: 1, picked: 2 });
  });

  it('with no external_id among them, updates the most recently updated profile', () => {
    h = testHandler();
    h.track({ attributes: [{ user_alias: { alias_name: 'a1', alias_label: 'l' }, _update_existing_only: false, email: 'n@x.com' }] });
    h.track({ attributes: [{ user_alias: { alias_name: 'a2', alias_label: 'l' }, _update_existing_only: false, email: 'n@x.com' }] });
    h.track({ attributes: [{ email: 'n@x.com', v: 1 }] });
    expect(h.users({ user_aliases: [{ alias_name: 'a2', alias_label: 'l' }] })[0].custom_attributes).toEqual({ v: 1 });
    expect(h.users({ user_aliases: [{ alias_name: 'a1', alias_label: 'l' }] })[0].custom_attributes).toEqual({});
  });

  it('uses email over phone when both are given without a primary identifier', () => {
    h = testHandler();
    h.track({ attributes: [{ external_id: 'byphone', phone: '+14155552671' }] });
    h.track({ attributes: [{ email: 'e@x.com', phone: '+14155552671', v: 1 }] });
    expect(h.user('byphone')?.custom_attributes).toEqual({});
    const [u] = h.users({ email_address: 'e@x.com' });
    expect(u.custom_attributes).toEqual({ v: 1 });
  });

  it('sets email and phone as fields when a primary identifier is present', () => {
    h = testHandler();
    h.track({ attributes: [{ external_id: 'u1', email: 'u1@x.com', phone: '+44 20 7946 0958' }] });
    expect(h.user('u1')).toMatchObject({ email: 'u1@x.com', phone: '+442079460958' });
    h.track({ attributes: [{ external_id: 'u1', email: null }] });
    expect(h.user('u1')?.email).toBeUndefined();
  });
});

describe('phone', () => {
  it('stores phones in E.164 and matches other spellings of the same number', () => {
    h = testHandler();
    h.track({ attributes: [{ external_id: 'u1', phone: '+14155552671' }] });
    h.track({ attributes: [{ phone: '+1 (415) 555-2671', v: 1 }] });
    expect(h.user('u1')?.custom_attributes).toEqual({ v: 1 });
    expect(h.users({ phone: '+1 415-555-2671' })).toHaveLength(1);
  });

  it('creates a phone-only profile when no profile holds the phone', () => {
    h = testHandler();
    h.track({ attributes: [{ phone: '+1 (415) 555-2671', v: 1 }] });
    const [u] = h.users({ phone: '+14155552671' });
    expect(u).toMatchObject({ phone: '+14155552671', custom_attributes: { v: 1 } });
  });

  it('rejects an invalid phone, as identifier or as field', () => {
    h = testHandler();
    const r = h.track({ attributes: [{ phone: '+1 555', v: 1 }, { external_id: 'u1', phone: '12345' }] });
    expect(r.body.errors.map((e: { index: number }) => e.index)).toEqual([0, 1]);
    expect(r.body.errors[0].type).toMatch(/phone/);
    expect(h.store.counts().profiles).toBe(0);
  });
});

describe('export', () => {
  it('lists identifiers that match no one and returns only fields_to_export', () => {
    h = testHandler();
    h.track({ attributes: [{ external_id: 'u1', first_name: 'A', a: 1 }] });
    const r = h.post('/users/export/ids', { external_ids: ['u1', 'ghost'], fields_to_export: ['external_id', 'first_name'] });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({ message: 'success', users: [{ external_id: 'u1', first_name: 'A' }], invalid_user_ids: ['ghost'] });
  });

  it('refuses a query with wrong types or naming no one', () => {
    h = testHandler();
    expect(h.post('/users/export/ids', { external_ids: 'u1' }).status).toBe(400);
    expect(h.post('/users/export/ids', { fields_to_export: ['email'] }).status).toBe(400);
  });
});
