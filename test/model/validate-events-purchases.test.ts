// Event and purchase objects (spec 2.4, 2.6; decisions.md "Events and purchases").
import { describe, expect, it } from 'vitest';
import { itemProblems } from '../../src/model/index.js';
import { event, expectAccepted, expectRejected, purchase } from './items.js';

const VALID_TIMES = [
  '2024-03-07T10:00:00Z',
  '2024-03-07T10:00:00',
  '2024-03-07T10:00:00+02:00',
  '2024-03-07T10:00:00-05:30',
  '2024-03-07T10:00:00.123Z',
  '2024-02-29T23:59:59Z',
];

const INVALID_TIMES: unknown[] = [
  '2026-02-30T00:00:00Z',
  '2023-02-29T10:00:00Z',
  'Mar 7 2024 10:00',
  '07/03/2024 10:00',
  'Thu, 07 Mar 2024 10:00:00 GMT',
  '2024-03-07T25:00:00Z',
  '2024-03-07T10:61:00Z',
  '2024-03-07T10:00:00+25:00',
  'now',
  '',
  1709805600,
  null,
];

describe('events', () => {
  it('accepts a minimal event (identifier, name, time)', () => {
    expectAccepted('events', event());
  });

  it.each([
    ['a name of 255 characters', { name: 'x'.repeat(255) }],
    ['a name of 255 emoji', { name: '🎵'.repeat(255) }],
    ['an app_id', { app_id: 'app-1' }],
    ['empty properties', { properties: {} }],
    ['nested properties', { properties: { song: { title: 'So What', artists: [{ name: 'Miles' }] }, plays: 3, live: true } }],
    ['a property name of 255 characters', { properties: { ['p'.repeat(255)]: 1 } }],
    ['a property name with a $ inside', { properties: { price$usd: 1 } }],
    ['_update_existing_only: true', { _update_existing_only: true }],
    ['a null property', { properties: { coupon: null } }],
  ])('accepts an event with %s', (_label, extra) => {
    expectAccepted('events', event(extra));
  });

  it.each([
    ['a missing name', { name: undefined }],
    ['an empty name', { name: '' }],
    ['a name of 256 characters', { name: 'x'.repeat(256) }],
    ['a numeric name', { name: 42 }],
  ])('rejects an event with %s', (_label, extra) => {
    expectRejected('events', event(extra), /^name:/);
  });

  it('rejects an event without time', () => {
    expectRejected('events', event({ time: undefined }), /^time:/);
  });

  it.each(VALID_TIMES)('accepts the event time %j', (time) => {
    expectAccepted('events', event({ time }));
  });

  it.each(INVALID_TIMES)('rejects the event time %j', (time) => {
    expectRejected('events', event({ time }), /^time: must be an ISO 8601/);
  });

  it.each([
    ['an empty property name', { '': 1 }],
    ['a property name starting with $', { $price: 1 }],
    ['a property name of 256 characters', { ['p'.repeat(256)]: 1 }],
  ])('rejects %s', (_label, properties) => {
    expectRejected('events', event({ properties }), /^properties\./);
  });

  it.each([
    ['a string', 'plays=3'],
    ['an array', [{ plays: 3 }]],
    ['null', null],
  ])('rejects properties given as %s', (_label, properties) => {
    expectRejected('events', event({ properties }), /^properties:/);
  });

  it('rejects a non-string app_id', () => {
    expectRejected('events', event({ app_id: 7 }), /^app_id:/);
  });

  it('rejects a non-boolean _update_existing_only', () => {
    expectRejected('events', event({ _update_existing_only: 'yes' }), /^_update_existing_only:/);
  });

  it('lists every problem of an event through itemProblems', () => {
    const problems = itemProblems('events', { external_id: 'user-1', name: '', time: 'Mar 7 2024 10:00', properties: { $x: 1 } });
    expect(problems).toEqual([
      expect.stringMatching(/^name:/),
      expect.stringMatching(/^time:/),
      expect.stringMatching(/^properties\.\$x:/),
    ]);
  });
});

describe('purchases', () => {
  it('accepts a minimal purchase (identifier, product_id, currency, price, time)', () => {
    expectAccepted('purchases', purchase());
  });

  it.each([
    ['a product_id of 255 characters', { product_id: 'p'.repeat(255) }],
    ['a lower-case currency', { currency: 'usd' }],
    ['a mixed-case currency', { currency: 'eUr' }],
    ['the currency JPY', { currency: 'JPY' }],
    ['an integer price', { price: 10 }],
    ['a zero price', { price: 0 }],
    ['quantity 1', { quantity: 1 }],
    ['quantity 100', { quantity: 100 }],
    ['an app_id', { app_id: 'app-1' }],
    ['properties of strings and numbers', { properties: { colour: 'red', size: 42 } }],
    // decisions.md "Events and purchases": the types of event properties, as the service's purchase object documents them
    ['a boolean property (the docs\' "sharpened": true)', { properties: { number: 2, sharpened: true } }],
    ['an array of objects property (an order\'s products)', { properties: { products: [{ name: 'Monitor', product_amount: 19.99 }, { name: 'Keyboard', product_amount: 199.99 }] } }],
    ['a nested object property', { properties: { colour: 'red', gift: { wrap: true } } }],
    ['an array property', { properties: { tags: ['a'] } }],
    ['a time property', { properties: { shipped_at: '2024-03-07T10:00:00Z' } }],
    // the same as for an event: the service's documentation neither lists null nor refuses it
    ['a null property, as an event takes one', { properties: { coupon: null } }],
    ['a time with an offset', { time: '2024-03-07T10:00:00+02:00' }],
    ['a time without an offset', { time: '2024-03-07T10:00:00' }],
  ])('accepts a purchase with %s', (_label, extra) => {
    expectAccepted('purchases', purchase(extra));
  });

  it.each([
    ['a missing product_id', { product_id: undefined }, /^product_id:/],
    ['an empty product_id', { product_id: '' }, /^product_id:/],
    ['a product_id of 256 characters', { product_id: 'p'.repeat(256) }, /^product_id:/],
    ['a numeric product_id', { product_id: 123 }, /^product_id:/],
    ['a missing currency', { currency: undefined }, /^currency:/],
    ['the currency ABC', { currency: 'ABC' }, /^currency:/],
    ['a two-letter currency', { currency: 'US' }, /^currency:/],
    ['a four-letter currency', { currency: 'USDX' }, /^currency:/],
    ['a currency symbol', { currency: '$' }, /^currency:/],
    ['a numeric currency code', { currency: 840 }, /^currency:/],
    ['a missing price', { price: undefined }, /^price:/],
    ['a price given as a string', { price: '9.99' }, /^price:/],
    ['a null price', { price: null }, /^price:/],
    ['quantity 0', { quantity: 0 }, /^quantity:/],
    ['quantity 101', { quantity: 101 }, /^quantity:/],
    ['quantity -1', { quantity: -1 }, /^quantity:/],
    ['a decimal quantity', { quantity: 1.5 }, /^quantity:/],
    ['a quantity given as a string', { quantity: '2' }, /^quantity:/],
    ['a null quantity', { quantity: null }, /^quantity:/],
    ['a missing time', { time: undefined }, /^time:/],
    ['an impossible date', { time: '2026-02-30T00:00:00Z' }, /^time:/],
    ['a free-form time', { time: 'Mar 7 2024 10:00' }, /^time:/],
    ['a numeric app_id', { app_id: 1 }, /^app_id:/],
    ['properties given as an array', { properties: ['red'] }, /^properties:/],
    ['a string over 255 characters inside an array of objects', { properties: { products: [{ name: 'x'.repeat(256) }] } }, /^properties\.products\[0\]\.name: property strings are at most 255/],
    ['a non-boolean _update_existing_only', { _update_existing_only: 1 }, /^_update_existing_only:/],
  ])('rejects a purchase with %s', (_label, extra, field) => {
    expectRejected('purchases', purchase(extra), field);
  });
});
