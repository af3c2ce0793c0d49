// Custom attribute operations and standard fields, read back through the export (spec 2.3; decisions.md).
import { afterEach, describe, expect, it } from 'vitest';
import { reportDeviceLanguage } from '../../src/emulator/apply.js';
import { testHandler, type TestHandler } from '../helpers/handler.js';

let h: TestHandler;
afterEach(() => h?.close());

function attrs(...items: Record<string, unknown>[]): Record<string, unknown> {
  h ??= testHandler();
  for (const item of items) {
    const r = h.track({ attributes: [{ external_id: 'u', ...item }] });
    expect(r.body.errors).toBeUndefined();
  }
  return h.user('u')?.custom_attributes;
}

describe('custom attributes', () => {
  it('sets scalars and removes with null', () => {
    h = testHandler();
    expect(attrs({ s: 'x', n: 1.5, b: false }, { s: null })).toEqual({ n: 1.5, b: false });
  });

  it('increments by an integer, a missing or non-numeric value counting as 0', () => {
    h = testHandler();
    expect(attrs({ n: { inc: 2 } }, { n: { inc: -5 } }, { s: 'text' }, { s: { inc: 4 } })).toEqual({ n: -3, s: 4 });
  });

  it('keeps arrays unique, a re-added value moving to the end', () => {
    h = testHandler();
    expect(attrs({ tags: ['a', 'b', 'a'] })).toEqual({ tags: ['b', 'a'] });
    expect(attrs({ tags: { add: ['c', 'b'] } })).toEqual({ tags: ['a', 'c', 'b'] });
    expect(attrs({ tags: { remove: ['a', 'zzz'] } })).toEqual({ tags: ['c', 'b'] });
  });

  it('caps arrays at 25 values, the oldest dropping first, whether set whole or grown by add', () => {
    h = testHandler();
    const thirty = Array.from({ length: 30 }, (_, i) => `v${i}`);
    expect((attrs({ big: thirty }).big as string[])).toEqual(thirty.slice(5));
    expect((attrs({ big: { add: ['new'] } }).big as string[])).toEqual([...thirty.slice(6), 'new']);
  });

  it('starts an array with add when the attribute is missing', () => {
    h = testHandler();
    expect(attrs({ fresh: { add: [1, 2] } })).toEqual({ fresh: [1, 2] });
  });

  it('stores arrays of objects as given', () => {
    h = testHandler();
    const stays = [{ name: 'Hotel', date: '2024-01-01', nights: 2 }, { name: 'Hotel', date: '2024-01-01', nights: 2 }];
    expect(attrs({ stays })).toEqual({ stays });
  });

  it('replaces nested objects whole, or deep-merges them with _merge_objects', () => {
    h = testHandler();
    attrs({ addr: { city: 'Oslo', geo: { lat: 1, lon: 2 } } });
    expect(attrs({ addr: { geo: { lat: 3 } } })).toEqual({ addr: { geo: { lat: 3 } } });
    expect(attrs({ _merge_objects: true, addr: { city: 'Bergen', geo: { lon: 9 } } })).toEqual({
      addr: { city: 'Bergen', geo: { lat: 3, lon: 9 } },
    });
  });

  it('merges no object into a nested time, nor a nested time into an object: either replaces the other whole', () => {
    h = testHandler();
    attrs({ o: { t: { a: 1 }, k: 'v' } });
    expect(attrs({ _merge_objects: true, o: { t: { $time: '2024-01-01' } } })).toEqual({ o: { t: { $time: '2024-01-01' }, k: 'v' } });
    expect(attrs({ _merge_objects: true, o: { t: { b: 2 } } })).toEqual({ o: { t: { b: 2 }, k: 'v' } });
    expect(attrs({ _merge_objects: true, o: { t: { $time: '2024-01-02' } } }, { _merge_objects: true, o: { t: { $time: '2024-01-03' } } })).toEqual({
      o: { t: { $time: '2024-01-03' }, k: 'v' },
    });
  });

  it('stores a $time value as an ISO time in UTC', () => {
    h = testHandler();
    expect(attrs({ seen: { $time: '2024-03-07T10:00:00+02:00' } })).toEqual({ seen: '2024-03-07T08:00:00.000Z' });
  });

  it('refuses to remove an identifier, leaving the profile unchanged', () => {
    h = testHandler();
    attrs({ a: 1 });
    const r = h.track({ attributes: [{ external_id: 'u', user_alias: null, a: 2 }] });
    expect(r.body.errors[0]).toMatchObject({ input_array: 'attributes', index: 0 });
    expect(r.body.errors[0].type).toMatch(/user_alias/);
    expect(h.user('u')?.custom_attributes).toEqual({ a: 1 });
  });
});

describe('standard fields', () => {
  it('keeps standard fields out of custom attributes', () => {
    h = testHandler();
    h.track({ attributes: [{ external_id: 'u', first_name: 'Ann', last_name: 'Lee', dob: '1990-02-28', email_subscribe: 'opted_in', country: 'NO', plan: 'pro' }] });
    const u = h.user('u');
    expect(u).toMatchObject({ first_name: 'Ann', last_name: 'Lee', dob: '1990-02-28', email_subscribe: 'opted_in', country: 'NO' });
    expect(u?.custom_attributes).toEqual({ plan: 'pro' });
    h.track({ attributes: [{ external_id: 'u', first_name: null }] });
    expect(h.user('u')?.first_name).toBeUndefined();
  });

  it('rejects a dob that is no real date, a language not in ISO 639-1, an unknown email_subscribe', () => {
    h = testHandler();
    const r = h.track({
      attributes: [
        { external_id: 'u', dob: '2023-02-29' },
        { external_id: 'u', language: 'english' },
        { external_id: 'u', email_subscribe: 'yes' },
      ],
    });
    expect(r.body.errors.map((e: { type: string }) => e.type.split(':')[0])).toEqual(['dob', 'language', 'email_subscribe']);
  });

  it('lets a language set through the API win over a device locale', () => {
    h = testHandler();
    h.track({ attributes: [{ external_id: 'dev' }, { external_id: 'api', language: 'nb' }] });
    const id = (x: string) => h.store.profileByExternalId(x)!.id;
    expect(reportDeviceLanguage(h.store, id('dev'), 'de')).toBe(true);
    expect(reportDeviceLanguage(h.store, id('api'), 'de')).toBe(false);
    expect(h.user('dev')?.language).toBe('de');
    expect(h.user('api')?.language).toBe('nb');
  });
});
