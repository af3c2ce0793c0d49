// The emulator's own endpoints, in-process: the request log, reset with a seed, the key rule, the page.
import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator } from '../../src/emulator/server.js';
import { isLoopbackHost } from '../../src/emulator/fixture-routes.js';
import type { SeedRequest } from '../../src/emulator/options.js';
import { KEY, testHandler, type TestHandler } from '../helpers/handler.js';

let h: TestHandler;
afterEach(() => h?.close());

const T = '2024-05-01T10:00:00Z';
const json = (r: { body?: unknown }) => r.body as Record<string, any>;
const logged = (query = '') => json(h.call('GET', `/_track/requests${query}`)).requests as Record<string, any>[];

describe('GET /_track/requests', () => {
  it('lists good, partly refused and fatal requests newest first, with counts, minor errors and bodies', () => {
    h = testHandler();
    h.track({ attributes: [{ external_id: 'u1', plan: 'pro' }] });
    const partly = { events: [{ external_id: 'u2', name: 'open', time: T }, { external_id: 'u2', name: 'bad', time: 'yesterday' }] };
    expect(h.track(partly).status).toBe(201);
    expect(h.post('/users/track', '{not json').status).toBe(400);
    expect(h.post('/users/track', { attributes: [] }, { authorization: `Bearer ${KEY}-wrong` }).status).toBe(401);

    const all = logged();
    expect(all.map((r) => r.status)).toEqual([401, 400, 201, 201]);
    const [unauthorized, fatal, refused, good] = all;
    expect(good).toMatchObject({ method: 'POST', path: '/users/track', processed: { attributes: 1 }, errors: [], body: { attributes: [{ external_id: 'u1', plan: 'pro' }] } });
    expect(good.time).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(refused.processed).toEqual({ events: 1 });
    expect(refused.errors).toEqual([expect.objectContaining({ input_array: 'events', index: 1, type: expect.stringContaining('time') })]);
    expect(refused.body).toEqual(partly);
    // a fatal answer keeps its message, and a body that is not JSON is kept as its text
    expect(fatal.message).toMatch(/not valid JSON/);
    expect(fatal.errors).toEqual([]);
    expect(fatal.body).toBe('{not json');
    expect(unauthorized.message).toBe('invalid API key');
    // no key is ever recorded: nothing of the Authorization header is in the log
    expect(JSON.stringify(all)).not.toContain(KEY);
    expect(all.map((r) => r.id)).toEqual([4, 3, 2, 1]);
  });

  it('filters by status, class, path and the external_id a request names, and takes a limit', () => {
    h = testHandler();
    h.track({ attributes: [{ external_id: 'a', x: 1 }] });
    h.track({ events: [{ external_id: 'b', name: 'e', time: T }, { user_alias: { alias_name: 'n', alias_label: 'l' }, name: 'e', time: T }] });
    h.track({ attributes: [{ external_id: 'a', x: 2 }] });
    h.post('/users/export/ids', { external_ids: ['a'] });
    h.post('/users/nope', {});
    expect(logged('?external_id=a').map((r) => r.body.attributes?.[0].x)).toEqual([2, 1]);
    expect(logged('?external_id=b')).toHaveLength(1);
    expect(logged('?path=/users/export/ids')).toHaveLength(1);
    expect(logged('?status=404').map((r) => r.path)).toEqual(['/users/nope']);
    expect(logged('?status=2xx')).toHaveLength(4);
    expect(logged('?limit=2').map((r) => r.id)).toEqual([5, 4]);
    expect(h.call('GET', '/_track/requests?limit=0').status).toBe(400);
    expect(h.call('GET', '/_track/requests?status=ok').status).toBe(400);
    // a filter misspelt is refused, not taken for none (every request)
    for (const [query, name] of [['?external_idd=a', '"external_idd"'], ['?externalId=a', '"externalId" (the filter is external_id)'], ['?limit=2&stauts=404', '"stauts"'], ['?=a', '""']]) {
      const refused = h.call('GET', `/_track/requests${query}`);
      expect(refused.status, query).toBe(400);
      expect(json(refused).message, query).toBe(`unknown query parameter ${name}; the filters are limit, status, path, external_id, email, phone, alias`);
    }
    const twice = h.call('GET', '/_track/requests?status=201&status=4xx');
    expect(twice.status).toBe(400);
    expect(json(twice).message).toBe('status: given more than once; give each filter once');
  });

  it('keeps the last N requests, cuts bodies over 64 KB with their size, and DELETE clears it', () => {
    h = testHandler({ requestLog: 3 });
    for (let i = 0; i < 5; i += 1) h.track({ attributes: [{ external_id: `u${i}` }] });
    expect(logged().map((r) => r.body.attributes[0].external_id)).toEqual(['u4', 'u3', 'u2']);
    const big = { attributes: [{ external_id: 'big', notes: Array.from({ length: 400 }, (_, i) => `${i}`.padEnd(200, 'x')) }] };
    h.track(big);
    const [cut] = logged('?limit=1');
    expect(cut.body_truncated).toBe(true);
    expect(cut.body_bytes).toBe(Buffer.byteLength(JSON.stringify(big)));
    expect(typeof cut.body).toBe('string');
    expect(Buffer.byteLength(cut.body)).toBeLessThanOrEqual(64 * 1024);
    expect(json(h.call('DELETE', '/_track/requests'))).toEqual({ message: 'cleared', cleared: 3 });
    expect(logged()).toEqual([]);
  });

  it('finds a request by whom it names however large its body, and cuts a body at a character boundary', () => {
    h = testHandler();
    // the user is named after the first 64 KB of the text: the log keeps whom it names, not only the cut text
    const filler = 'é'.repeat(40_000);
    h.track({ attributes: [{ notes: filler, external_id: 'late', email: 'Late@Example.com', phone: '+14155550100', user_alias: { alias_name: 'crm:eu', alias_label: '9' } }] });
    h.track({ attributes: [{ external_id: 'other' }] });
    const [cut] = logged('?external_id=late');
    expect(cut?.body_truncated).toBe(true);
    expect(logged('?email=late@example.com')).toHaveLength(1);
    expect(logged('?phone=%2B14155550100')).toHaveLength(1);
    expect(logged('?alias=crm:eu:9')).toHaveLength(1);
    expect(logged('?external_id=late&email=other@example.com')).toEqual([]);
    expect(h.call('GET', '/_track/requests?alias=nolabel').status).toBe(400);
    // 'é' is two bytes: the cut never ends inside one (no U+FFFD)
    expect(cut.body).not.toContain('\uFFFD');
    expect(Buffer.byteLength(cut.body)).toBeGreaterThan(64 * 1024 - 4);
    // the page filters the same way
    const page = h.call('GET', '/_track/?view=requests&external_id=late').text ?? '';
    expect(page).toContain('1 request shown');
    // a filter the page cannot use shows no request and says why, not every request
    for (const [query, says] of [
      ['&externalId=late', 'unknown filter &#34;externalId&#34;: the filters are status, path, external_id, email, phone, alias (and limit, how many to show)'],
      ['&status=ok', 'status: expected a status such as 201, a class such as 4xx, or dropped, got &#34;ok&#34;'],
      ['&status=201&status=4xx', 'status: given more than once; give each filter once'],
      ['&view=requests', 'view: given more than once; give each parameter once'],
      ['&limit=0', 'limit: expected a whole number of at least 1, got &#34;0&#34;'],
      ['&limit=1001', 'limit: the page shows at most 1,000 requests; GET /_track/requests?limit=1001 gives more'],
    ]) {
      const refused = h.call('GET', `/_track/?view=requests${query}`).text ?? '';
      expect(refused, query).toContain(`role="alert">${says}</p>`);
      expect(refused, query).toContain('0 requests shown');
      // not "No requests logged.": the log holds some
      expect(refused, query).toContain('No requests shown: the page cannot use what the address asks (above).');
    }
    // a limit, as GET /_track/requests takes one: the newest so many, kept by the form
    const two = h.call('GET', '/_track/?view=requests&limit=2').text ?? '';
    expect(two).toContain('2 requests shown');
    expect(two).toContain('<input type="hidden" name="limit" value="2">');
    expect(h.call('GET', '/_track/?view=requests&external_id=nobody').text).toContain('No logged request matches these filters.');
    // a usable limit stays in the form while something else is mended there; the text given is echoed as given
    expect(h.call('GET', '/_track/?view=requests&limit=5&status=999').text).toContain('<input type="hidden" name="limit" value="5">');
    expect(h.call('GET', '/_track/?view=requests&limit=99999999999999999999999').text).toContain('GET /_track/requests?limit=99999999999999999999999 gives more');
  });

  it('finds a request by a phone however either side writes it, as the emulator matches phones', () => {
    h = testHandler();
    // a 10-digit U.S. number without its country code names +14155552671 (decisions.md "Identifying the user")
    h.track({ events: [{ phone: '4155552671', name: 'played', time: '2024-01-01T00:00:00Z' }] });
    h.track({ attributes: [{ external_id: 'u', phone: '+1 (415) 555-2671' }] });
    h.track({ attributes: [{ phone: '+14155550100' }] });
    for (const query of ['%2B14155552671', '4155552671', '(415)%20555-2671']) expect(logged(`?phone=${query}`), query).toHaveLength(2);
    expect(logged('?phone=not-a-number')).toEqual([]);
  });

  it('takes a status in any case and a path as the server routes it', () => {
    h = testHandler();
    h.track({ attributes: [{ external_id: 'a' }] });
    h.post('/users/track', {}, { 'x-track-fault': 'drop' });
    expect(logged('?status=DROPPED')).toHaveLength(1);
    expect(logged('?path=/users/track/')).toHaveLength(2);
    expect(logged('?path=//users/track')).toHaveLength(2);
  });

  it('redacts an api_key field of a body in the log and on the page', () => {
    h = testHandler();
    h.track({ api_key: 'legacy-secret-1', attributes: [{ external_id: 'a' }] });
    h.post('/users/track', '{"api_key": "legacy-secret-2", not json');
    const [text, parsed] = logged();
    expect(parsed.body).toEqual({ api_key: '[redacted]', attributes: [{ external_id: 'a' }] });
    expect(text.body).toBe('{"api_key": "[redacted]", not json');
    const page = h.call('GET', '/_track/?view=requests').text ?? '';
    for (const shown of [JSON.stringify(logged()), page]) expect(shown).not.toMatch(/legacy-secret/);
  });

  it('gives the size of a chunked body over --max-body as the bytes read', async () => {
    const emulator = await startEmulator({ apiKeys: [KEY], maxBodyBytes: 100 });
    try {
      const status = await new Promise<number | undefined>((resolve, reject) => {
        const req = request(`${emulator.url}/users/track`, { method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' } }, (res) => {
          res.resume();
          resolve(res.statusCode);
        });
        req.on('error', reject);
        // no content-length: sent in chunks
        for (let i = 0; i < 10; i += 1) req.write('x'.repeat(100));
        req.end();
      });
      expect(status).toBe(413);
      expect(emulator.requests()[0]).toMatchObject({ status: 413, body: null, body_bytes: 1000 });
    } finally {
      await emulator.close();
    }
  });

  it('does not log /health or its own endpoints, and logs nothing with --request-log 0', () => {
    h = testHandler({ requestLog: 0 });
    h.call('GET', '/health');
    h.track({ attributes: [{ external_id: 'u' }] });
    expect(logged()).toEqual([]);
  });
});

describe('POST /_track/reset', () => {
  const seed: SeedRequest[] = [
    {
      body: { attributes: [{ external_id: 'seeded', tier: 'gold' }], events: [{ external_id: 'seeded', name: 'joined', time: T }] },
      origins: { attributes: [{ file: 'users.csv', line: 2, row: {} }], events: [{ file: 'users.csv', line: 3, row: {} }], purchases: [] },
    },
  ];

  it('empties profiles, events, purchases, tokens and the log, and returns to the seeded state', () => {
    h = testHandler({ seedRequests: seed });
    h.handler.applySeed();
    expect(h.user('seeded')?.custom_attributes).toEqual({ tier: 'gold' });
    h.track({
      attributes: [{ external_id: 'seeded', tier: 'lead' }, { external_id: 'new', push_tokens: [{ app_id: 'a', token: 't1' }] }],
      purchases: [{ external_id: 'new', product_id: 'p', currency: 'USD', price: 1, time: T }],
    });
    expect(h.store.counts()).toEqual({ profiles: 2, events: 1, purchases: 1 });
    const r = h.call('POST', '/_track/reset');
    expect(r.status).toBe(200);
    expect(json(r)).toEqual({ message: 'reset', profiles: 1 });
    // the log held the track request and the export reads: all gone; the reset itself is not logged
    expect(logged()).toEqual([]);
    expect(h.store.counts()).toEqual({ profiles: 1, events: 1, purchases: 0 });
    expect(h.user('seeded')?.custom_attributes).toEqual({ tier: 'gold' });
    expect(h.user('new')).toBeUndefined();
    expect(h.store.pushToken('a', 't1')).toBeUndefined();
  });

  it('refuses a seed whose item the endpoint refuses, naming the file and line', () => {
    h = testHandler({ blocklist: ['blocked'], seedRequests: [{ body: { attributes: [{ external_id: 'blocked' }] }, origins: { attributes: [{ file: 'seed.ndjson', line: 7, row: {} }], events: [], purchases: [] } }] });
    expect(() => h.handler.applySeed()).toThrow(/^seed\.ndjson:7: seed refused: .*blocklisted/);
  });

  it('names the blocklisted row of a seed request, not its first', () => {
    const origins = { attributes: [2, 3, 4].map((line) => ({ file: 'users.csv', line, row: {} })), events: [], purchases: [] };
    h = testHandler({ blocklist: ['b'], seedRequests: [{ body: { attributes: [{ external_id: 'a' }, { external_id: 'b' }, { external_id: 'c' }] }, origins }] });
    expect(() => h.handler.applySeed()).toThrow(/^users\.csv:3: seed refused: .*blocklisted/);
  });
});

describe('the key rule for /_track/*', () => {
  it('on a loopback address takes no key', () => {
    h = testHandler();
    expect(h.call('GET', '/_track/requests').status).toBe(200);
    expect(h.call('GET', '/_track/').status).toBe(200);
  });

  it('on a network address needs one of the keys, by Bearer or by a session from the login form', () => {
    h = testHandler({ fixtureKeyRequired: true });
    expect(h.call('GET', '/_track/requests').status).toBe(401);
    expect(h.call('POST', '/_track/reset').status).toBe(401);
    expect(h.call('GET', '/_track/requests', { headers: { authorization: 'Bearer nope' } }).status).toBe(401);
    expect(h.call('GET', '/_track/requests', { headers: { authorization: `Bearer ${KEY}` } }).status).toBe(200);
    const page = h.call('GET', '/_track/');
    expect(page.status).toBe(401);
    expect(page.text).toContain('<form method="post" action="/_track/login"');

    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const wrong = h.call('POST', '/_track/login', { headers: form, body: 'key=guess' });
    expect(wrong.status).toBe(401);
    expect(wrong.text).toContain('not one of this emulator');
    const login = h.call('POST', '/_track/login', { headers: form, body: `key=${KEY}` });
    expect(login.status).toBe(303);
    const cookie = login.headers['set-cookie'];
    expect(cookie).toMatch(/^track_session=[\w-]+; Path=\/_track; HttpOnly; SameSite=Strict$/);
    // the cookie holds a session, not the key
    expect(cookie).not.toContain(KEY);
    const session = cookie.split(';')[0];
    expect(h.call('GET', '/_track/', { headers: { cookie: session } }).status).toBe(200);
    expect(h.call('GET', '/_track/', { headers: { cookie: 'track_session=made-up' } }).status).toBe(401);
  });

  it('refuses a request another site sends from a browser (a form posting a reset)', () => {
    h = testHandler();
    const r = h.call('POST', '/_track/reset', { headers: { host: '127.0.0.1:4000', origin: 'https://evil.example' } });
    expect(r.status).toBe(403);
    expect(h.call('POST', '/_track/reset', { headers: { host: '127.0.0.1:4000', origin: 'http://127.0.0.1:4000' } }).status).toBe(200);
  });

  it('on a loopback address answers only to loopback names (a rebound DNS name gets no data)', () => {
    h = testHandler();
    h.track({ attributes: [{ external_id: 'private' }] });
    expect(h.call('GET', '/_track/requests', { headers: { host: 'attacker.example:4000' } }).status).toBe(403);
    for (const host of ['127.0.0.1:4000', 'localhost:4000', '[::1]:4000']) {
      expect(h.call('GET', '/_track/requests', { headers: { host } }).status).toBe(200);
    }
  });

  it('knows loopback addresses', () => {
    for (const host of ['127.0.0.1', '127.8.9.10', '::1', '[::1]', 'localhost', 'LOCALHOST']) expect(isLoopbackHost(host)).toBe(true);
    for (const host of ['0.0.0.0', '::', '10.0.0.5', '192.168.1.2', 'example.com', '128.0.0.1']) expect(isLoopbackHost(host)).toBe(false);
  });
});

describe('the web view', () => {
  it('shows attribute values and bodies as text: a <script> in the data is escaped', () => {
    h = testHandler();
    const evil = '<script>alert(1)</script>';
    h.track({ attributes: [{ external_id: evil, email: 'x@example.com', note: evil }], events: [{ external_id: evil, name: evil, time: T, properties: { p: evil } }] });
    const list = h.call('GET', `/_track/?q=${encodeURIComponent('<script')}`);
    expect(list.headers['content-security-policy']).toContain("default-src 'none'");
    expect(list.text).toContain('1 profile matching');
    const serviceId = /data-service-id="([0-9a-f]+)"/.exec(list.text!)![1];
    for (const page of [list.text!, h.call('GET', `/_track/?profile=${serviceId}`).text!, h.call('GET', '/_track/?view=requests').text!]) {
      expect(page).not.toContain('<script');
      expect(page).toContain('&#60;script&#62;');
    }
    expect(h.call('GET', '/_track/?profile=nobody').status).toBe(404);
  });

  it('searches by external_id, email, phone and alias, and counts the matches', () => {
    h = testHandler();
    h.track({
      attributes: [
        { external_id: 'alice-1', email: 'alice@example.com' },
        { external_id: 'bob-2', phone: '+14155552671' },
        { user_alias: { alias_name: 'carol-device', alias_label: 'app' }, _update_existing_only: false, home_city: 'X' },
        { external_id: 'dave_3' },
      ],
    });
    const count = (q: string) => /id="profile-count">(\d+)/.exec(h.call('GET', `/_track/?q=${encodeURIComponent(q)}`).text!)![1];
    expect(count('')).toBe('4');
    expect(count('ALICE@')).toBe('1');
    expect(count('41555')).toBe('1');
    expect(count('carol')).toBe('1');
    // a LIKE wildcard in the search is a character, not a pattern
    expect(count('_')).toBe('1');
    expect(count('zzz')).toBe('0');
  });
});
