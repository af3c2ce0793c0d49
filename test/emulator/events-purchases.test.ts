// Events and purchases (spec 2.4, 2.6; decisions.md "Events and purchases").
import { afterEach, describe, expect, it } from 'vitest';
import { testHandler, type TestHandler } from '../helpers/handler.js';

let h: TestHandler;
afterEach(() => h?.close());

const ev = (extra: Record<string, unknown> = {}) => ({ external_id: 'u', name: 'login', time: '2024-03-07T10:00:00Z', ...extra });
const buy = (extra: Record<string, unknown> = {}) => ({ external_id: 'u', product_id: 'p1', currency: 'eur', price: 9.5, time: '2024-03-07T10:00:00Z', ...extra });

describe('events', () => {
  it('stores identical events twice, each with its own ID', () => {
    h = testHandler();
    h.track({ events: [ev({ properties: { plan: 'pro' } }), ev({ properties: { plan: 'pro' } })] });
    const p = h.store.profileByExternalId('u')!;
    const stored = h.store.eventsOf(p.id);
    expect(stored).toHaveLength(2);
    expect(stored[0].id).not.toBe(stored[1].id);
    expect(stored[0].properties).toEqual({ plan: 'pro' });
    expect(h.user('u')?.custom_events).toEqual([{ name: 'login', first: '2024-03-07T10:00:00.000Z', last: '2024-03-07T10:00:00.000Z', count: 2 }]);
  });

  it('creates the profile of an unknown user unless the event may only update', () => {
    h = testHandler();
    h.track({ events: [ev({ external_id: 'new' }), ev({ external_id: 'skip', _update_existing_only: true })] });
    expect(h.user('new')).toBeDefined();
    expect(h.user('skip')).toBeUndefined();
  });

  it('does not create an alias-only user from an event by default', () => {
    h = testHandler();
    const alias = { alias_name: 'x', alias_label: 'l' };
    h.track({ events: [{ user_alias: alias, name: 'e', time: '2024-01-01T00:00:00Z' }] });
    expect(h.store.counts()).toMatchObject({ profiles: 0, events: 0 });
  });

  it('rejects bad times and property names', () => {
    h = testHandler();
    const r = h.track({
      events: [ev({ time: '2026-02-30T00:00:00Z' }), ev({ time: 'Mar 7 2024 10:00' }), ev({ properties: { $bad: 1 } }), ev()],
    });
    expect(r.body.errors.map((e: { index: number; type: string }) => [e.index, e.type.split(/[:.]/)[0]])).toEqual([
      [0, 'time'],
      [1, 'time'],
      [2, 'properties'],
    ]);
    expect(r.body.events_processed).toBe(1);
  });
});

describe('purchases', () => {
  it('stores a purchase with the currency upper-cased and quantity 1 by default', () => {
    h = testHandler();
    h.track({ purchases: [buy(), buy({ quantity: 3 })] });
    const stored = h.store.purchasesOf(h.store.profileByExternalId('u')!.id);
    expect(stored.map((p) => [p.productId, p.currency, p.price, p.quantity])).toEqual([
      ['p1', 'EUR', 9.5, 1],
      ['p1', 'EUR', 9.5, 3],
    ]);
    // decisions.md: quantity 3 counts as 3 purchases, as the service records 3 of quantity 1
    expect(h.user('u')?.purchases).toEqual([{ name: 'p1', first: '2024-03-07T10:00:00.000Z', last: '2024-03-07T10:00:00.000Z', count: 4 }]);
  });

  it.each([
    ['currency', { currency: 'ABC' }],
    ['price', { price: '9.99' }],
    ['quantity', { quantity: 0 }],
    ['quantity', { quantity: 101 }],
    ['product_id', { product_id: '' }],
  ])('rejects a bad %s', (field, extra) => {
    h = testHandler();
    const r = h.track({ purchases: [buy(extra)] });
    expect(r.body.errors[0].type.startsWith(field)).toBe(true);
    expect(h.store.counts().purchases).toBe(0);
  });
});

it('processes attributes, then events, then purchases', () => {
  h = testHandler();
  // the event and purchase may only update: they land because the attributes item created the user first
  const r = h.track({
    purchases: [buy({ _update_existing_only: true })],
    events: [ev({ _update_existing_only: true })],
    attributes: [{ external_id: 'u', a: 1 }],
  });
  expect(r.body).toEqual({ message: 'success', attributes_processed: 1, events_processed: 1, purchases_processed: 1 });
  expect(h.store.counts()).toEqual({ profiles: 1, events: 1, purchases: 1 });
});
