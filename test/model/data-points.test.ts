// The data points an item costs, by the documented rule (docs/upload.md "Data points").
import { describe, expect, it } from 'vitest';
import { attributePoints, dataPoints } from '../../src/model/data-points.js';

describe('dataPoints', () => {
  it('counts each attribute set, and nothing for identifiers, control fields, subscriptions and push tokens', () => {
    const item = {
      external_id: 'u1',
      _update_existing_only: false,
      first_name: 'Ann',
      email: 'ann@example.com',
      country: 'US',
      plan: null,
      email_subscribe: 'opted_in',
      push_subscribe: 'subscribed',
      subscription_groups: [{ subscription_group_id: 'g', subscription_state: 'subscribed' }],
      push_tokens: [{ app_id: 'a', token: 't' }],
    };
    // first_name, email, country, plan (null clears: still a data point)
    expect(dataPoints('attributes', item, 'external_id')).toBe(4);
    // email names the user here: free
    expect(dataPoints('attributes', { email: 'ann@example.com', first_name: 'Ann' }, 'email')).toBe(1);
    expect(dataPoints('attributes', { external_id: 'u1' }, 'external_id')).toBe(0);
  });

  it('counts arrays, operations and objects as the rule says', () => {
    expect(attributePoints(['a', 'b', 'c'])).toBe(1);
    expect(attributePoints({ add: ['a', 'b'] })).toBe(2);
    expect(attributePoints({ remove: ['a'] })).toBe(1);
    expect(attributePoints({ inc: 5 })).toBe(1);
    expect(attributePoints({ $time: '2024-01-01T00:00:00Z' })).toBe(1);
    expect(attributePoints({ make: 'Ford', engine: { size: 2, fuel: 'gas' } })).toBe(4);
    expect(attributePoints([{ id: 1, name: 'x' }, { id: 2 }])).toBe(3);
    expect(attributePoints({ $add: [{ id: 1, name: 'x' }] })).toBe(2);
    expect(attributePoints({ $update: [{ $identifier_key: 'id', $identifier_value: 1, $new_object: { name: 'y', size: 2 } }] })).toBe(2);
    expect(attributePoints({ $remove: [{ $identifier_key: 'id', $identifier_value: 1 }] })).toBe(1);
  });

  it('counts a nested time once, as the key that holds it: {"$time": ...} is how its value is written', () => {
    expect(attributePoints({ dates: { birthday: { $time: '1980-01-01' }, wedding: { $time: '2020-05-28' } } })).toBe(3);
    expect(attributePoints([{ item: 'T-shirt', bought: { $time: '2020-05-28' } }])).toBe(2);
    expect(attributePoints({ $add: [{ id: 1, at: { $time: '2020-05-28' } }] })).toBe(2);
    expect(attributePoints({ $update: [{ $identifier_key: 'id', $identifier_value: 1, $new_object: { at: { $time: '2020-05-28' } } }] })).toBe(1);
    // a key beside $time makes it an object, each of whose keys counts
    expect(attributePoints({ at: { $time: '2020-05-28', zone: 'UTC' } })).toBe(3);
  });

  it('counts each part of an operation of two keys: add and remove, or two of $add, $remove and $update', () => {
    expect(attributePoints({ add: ['a', 'b'], remove: ['c'] })).toBe(3);
    expect(attributePoints({ $add: [{ id: 1, name: 'x' }], $remove: [{ $identifier_key: 'id', $identifier_value: 2 }] })).toBe(3);
  });

  it('counts an event or a purchase and each of its properties', () => {
    expect(dataPoints('events', { external_id: 'u1', name: 'login', time: '2024-01-01T00:00:00Z' })).toBe(1);
    expect(dataPoints('events', { external_id: 'u1', name: 'login', time: 't', properties: { a: 1, b: { c: 2 } } })).toBe(3);
    expect(dataPoints('purchases', { external_id: 'u1', product_id: 'p', currency: 'USD', price: 1, time: 't', properties: { size: 'L' } })).toBe(2);
  });

  it("counts a purchase property holding a boolean, an object or an array of objects once: the service ingests it as one value", () => {
    const properties = {
      sharpened: true,
      shipping: { method: 'ground', cost: 4.5 },
      products: [{ name: 'Monitor', amount: 19.99 }, { name: 'Keyboard', amount: 199.99 }],
      ordered_at: '2024-03-07T10:00:00Z',
    };
    expect(dataPoints('purchases', { external_id: 'u1', product_id: 'p', currency: 'USD', price: 1, time: 't', properties })).toBe(5);
  });

  it('counts each operation of a combined one on an array of objects', () => {
    const value = {
      $update: [{ $identifier_key: 'id', $identifier_value: 1, $new_object: { name: 'y', size: 2 } }],
      $remove: [{ $identifier_key: 'id', $identifier_value: 2 }, { $identifier_key: 'id', $identifier_value: 3 }],
      $add: [{ id: 4, name: 'z' }],
    };
    expect(attributePoints(value)).toBe(2 + 2 + 2);
    expect(dataPoints('attributes', { external_id: 'u1', pets: value }, 'external_id')).toBe(6);
  });
});
