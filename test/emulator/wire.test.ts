// Response shapes, status codes and the order of checks (decisions.md "Wire format").
import { afterEach, describe, expect, it } from 'vitest';
import { KEY, testHandler, type TestHandler } from '../helpers/handler.js';

let h: TestHandler;
afterEach(() => h?.close());

const event = (i: number) => ({ external_id: `u${i}`, name: 'e', time: '2024-01-01T00:00:00Z' });

describe('success', () => {
  it('answers 201 with a count for exactly the arrays the request carried', () => {
    h = testHandler();
    const r = h.track({ attributes: [{ external_id: 'a', x: 1 }], events: [event(1), event(2)] });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({ message: 'success', attributes_processed: 1, events_processed: 2 });
  });

  it('accepts an empty array with a count of 0 and ignores unknown top-level keys', () => {
    h = testHandler();
    expect(h.track({ attributes: [], partner: 'x' })).toEqual({ status: 201, body: { message: 'success', attributes_processed: 0 } });
  });

  it('reports minor errors by array and index, applies the rest, and counts only what was queued', () => {
    h = testHandler();
    const r = h.track({
      attributes: [{ external_id: 'a', n: 1 }, 'not an object', { external_id: 'b', dob: '2023-02-29' }],
      events: [event(1), { external_id: 'u2', time: '2024-01-01T00:00:00Z' }],
    });
    expect(r.status).toBe(201);
    expect(r.body.attributes_processed).toBe(1);
    expect(r.body.events_processed).toBe(1);
    expect(r.body.errors).toHaveLength(3);
    expect(r.body.errors[0]).toMatchObject({ input_array: 'attributes', index: 1 });
    expect(r.body.errors[1]).toMatchObject({ input_array: 'attributes', index: 2 });
    expect(r.body.errors[1].type).toMatch(/dob/);
    expect(r.body.errors[2]).toMatchObject({ input_array: 'events', index: 1 });
    expect(r.body.errors[2].type).toMatch(/name/);
    expect(h.user('a')?.custom_attributes).toEqual({ n: 1 });
    expect(h.user('b')).toBeUndefined();
    expect(h.user('u2')).toBeUndefined();
  });

  it('counts two attribute items for one external_id as 2', () => {
    h = testHandler();
    expect(h.track({ attributes: [{ external_id: 'a', x: 1 }, { external_id: 'a', y: 2 }] }).body.attributes_processed).toBe(2);
  });
});

describe('fatal errors', () => {
  it.each([
    ['not JSON', '{"attributes": [', /JSON/],
    ['not an object', '[1,2]', /object/],
    ['no array', '{}', /at least one/],
    ['null array', '{"attributes": null}', /attributes/],
    ['wrong top-level type', '{"events": {"name": "x"}}', /events/],
  ])('%s is a 400 in the fatal shape, nothing applied', (_label, body, message) => {
    h = testHandler();
    const r = h.post('/users/track', body);
    expect(r.status).toBe(400);
    const b = r.body as { message: string; errors: string[] };
    expect(b.message).toMatch(message);
    expect(b.errors).toEqual([b.message]);
  });

  it('refuses a body that is not UTF-8 text (400, nothing applied) rather than storing replacement characters', () => {
    h = testHandler();
    const body = Buffer.concat([Buffer.from('{"attributes":[{"external_id":"ok","a":1},{"external_id":"u8","s":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}]}')]);
    const r = h.post('/users/track', body);
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ message: 'request body is not valid JSON: it is not UTF-8 text', errors: ['request body is not valid JSON: it is not UTF-8 text'] });
    expect(h.store.counts().profiles).toBe(0);
  });

  it('refuses 51 items under mau and applies none of them; 50 pass', () => {
    h = testHandler();
    const items = Array.from({ length: 51 }, (_, i) => event(i));
    expect(h.track({ events: items.slice(0, 25), attributes: items.slice(25).map((e) => ({ external_id: e.external_id, v: 1 })) }).status).toBe(400);
    expect(h.store.counts().profiles).toBe(0);
    expect(h.track({ events: items.slice(0, 50) }).status).toBe(201);
  });

  it('under legacy takes 75 per array and refuses 76 in one', () => {
    h = testHandler({ limits: 'legacy' });
    const items = Array.from({ length: 76 }, (_, i) => event(i));
    expect(h.track({ events: items.slice(0, 75), attributes: items.slice(0, 75).map((e) => ({ external_id: e.external_id, v: 1 })) }).status).toBe(201);
    expect(h.track({ events: items }).status).toBe(400);
  });

  it('refuses a request naming a blocklisted external_id in any array, with the documented message', () => {
    h = testHandler({ blocklist: ['dummy'] });
    const r = h.track({ attributes: [{ external_id: 'ok', a: 1 }], purchases: [{ external_id: 'dummy', product_id: 'p', currency: 'USD', price: 1, time: '2024-01-01T00:00:00Z' }] });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ message: 'provided external_id is blocklisted and not allowed', errors: ['provided external_id is blocklisted and not allowed'] });
    expect(h.user('ok')).toBeUndefined();
  });
});

describe('order of checks', () => {
  it('answers 404 for an unknown route or method before looking at the key', () => {
    h = testHandler();
    expect(h.post('/users/nope', {}, { authorization: '' }).status).toBe(404);
    const r = h.post('/users/track', {}, {});
    expect(r.status).not.toBe(404);
  });

  it('answers 401 without, with a malformed, or with an unknown key; 403 without the permission', () => {
    h = testHandler({ apiKeys: [KEY, 'reader:users.export.ids'] });
    const body = { attributes: [{ external_id: 'a', x: 1 }] };
    expect(h.post('/users/track', body, { authorization: '' }).status).toBe(401);
    expect(h.post('/users/track', body, { authorization: `Basic ${KEY}` }).status).toBe(401);
    expect(h.post('/users/track', body, { authorization: 'Bearer wrong' }).status).toBe(401);
    const denied = h.post('/users/track', body, { authorization: 'Bearer reader' });
    expect(denied.status).toBe(403);
    expect((denied.body as { errors: string[] }).errors[0]).toMatch(/users\.track/);
    expect(denied.headers['x-ratelimit-remaining']).toBe('3000');
    expect(h.post('/users/export/ids', { external_ids: ['a'] }, { authorization: 'Bearer reader' }).status).toBe(201);
    expect(h.store.counts().profiles).toBe(0);
  });

  it('checks auth before content type, and content type before JSON', () => {
    h = testHandler();
    expect(h.post('/users/track', 'x', { authorization: '', 'content-type': 'text/plain' }).status).toBe(401);
    expect(h.post('/users/track', 'not json', { 'content-type': 'text/plain' }).status).toBe(415);
    expect(h.post('/users/track', '{"attributes":[]}', { 'content-type': 'application/json; charset=utf-8' }).status).toBe(201);
  });

  it('describes limits on 401 and 404 answers under /users/ too, counting neither', () => {
    h = testHandler({ rateLimit: '5/10s' });
    const unauthorized = h.post('/users/track', {}, { authorization: 'Bearer nope' });
    expect(unauthorized.status).toBe(401);
    expect(unauthorized.headers['x-ratelimit-limit']).toBe('5');
    const missing = h.post('/users/nope', {});
    expect(missing.status).toBe(404);
    expect(missing.headers['x-ratelimit-remaining']).toBe('5');
    expect(h.post('/users/track', { attributes: [] }).headers['x-ratelimit-remaining']).toBe('4');
  });

  it('answers every /users/* response past auth with the rate-limit headers', () => {
    h = testHandler();
    const r = h.post('/users/track', '{bad');
    expect(r.status).toBe(400);
    expect(r.headers['x-ratelimit-limit']).toBe('3000');
    expect(Number(r.headers['x-ratelimit-remaining'])).toBe(2999);
    expect(Number(r.headers['x-ratelimit-reset'])).toBeGreaterThan(Date.now() / 1000 - 1);
  });
});
