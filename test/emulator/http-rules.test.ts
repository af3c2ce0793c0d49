// Rules of the endpoint checked over real HTTP, each by reading back what was stored: fields an item
// of one array does not have (push_token_import on an event), what a push token import keeps, the
// values purchase properties take, how purchases are counted, and which emails are refused.
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/index.js';

let emu: Emulator | undefined;
afterEach(async () => {
  await emu?.close();
  emu = undefined;
});

/** A JSON answer, read field by field as the assertions need. */
type Json = any;

async function post(path: string, body: unknown): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${emu!.url}${path}`, {
    method: 'POST',
    headers: { authorization: 'Bearer k', 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

const track = (body: unknown) => post('/users/track', body);
const exported = async (query: unknown): Promise<Json[]> => (await post('/users/export/ids', query)).body.users;
const TIME = '2024-03-01T10:00:00Z';
const STORED = '2024-03-01T10:00:00.000Z';

describe('push_token_import on an event or a purchase (a field only the attributes object has, spec 2.5)', () => {
  it('stores the event and the purchase for the user their external_id names', async () => {
    emu = await startEmulator({ apiKeys: ['k'] });
    const r = await track({
      events: [{ external_id: 'u4', push_token_import: true, name: 'e', time: TIME }],
      purchases: [{ external_id: 'u4', push_token_import: true, product_id: 'p', currency: 'USD', price: 1, time: TIME }],
    });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({ message: 'success', events_processed: 1, purchases_processed: 1 });
    const [user] = await exported({ external_ids: ['u4'] });
    expect(user?.custom_events).toEqual([{ name: 'e', first: STORED, last: STORED, count: 1 }]);
    expect(user?.purchases).toEqual([{ name: 'p', first: STORED, last: STORED, count: 1 }]);
  });

  it('stores an event named by email with push_token_import for that email', async () => {
    emu = await startEmulator({ apiKeys: ['k'] });
    expect((await track({ events: [{ email: 'ann@example.com', push_token_import: true, name: 'e', time: TIME }] })).status).toBe(201);
    const [user] = await exported({ email_address: 'ann@example.com' });
    expect(user?.custom_events).toEqual([{ name: 'e', first: STORED, last: STORED, count: 1 }]);
  });

  it('refuses an event whose only "identifier" is push_token_import, as any unidentified event', async () => {
    emu = await startEmulator({ apiKeys: ['k'] });
    const r = await track({ events: [{ push_token_import: true, name: 'e', time: TIME }] });
    expect(r.status).toBe(400);
    expect(r.body.errors).toEqual([{ type: expect.stringMatching(/^external_id: missing/), input_array: 'events', index: 0 }]);
    expect(emu.store.counts().profiles).toBe(0);
  });
});

describe('a push token import with a user_alias (spec 2.5 rule 1 forbids only external_id and service_id)', () => {
  const alias = { alias_name: 'n', alias_label: 'l' };
  const importing = (token: string, extra: Record<string, unknown> = {}) => ({
    push_token_import: true,
    user_alias: alias,
    push_tokens: [{ app_id: 'app', token }],
    ...extra,
  });

  it('keeps the alias on the temporary profile, where an export by the alias finds it', async () => {
    emu = await startEmulator({ apiKeys: ['k'] });
    const r = await track({ attributes: [importing('t1', { email: 'ann@example.com' })] });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({ message: 'success', attributes_processed: 1 });
    const users = await exported({ user_aliases: [alias] });
    expect(users).toHaveLength(1);
    expect(users[0]).toMatchObject({ user_aliases: [alias], email: 'ann@example.com', push_tokens: [{ app_id: 'app', token: 't1' }] });
    expect(users[0].external_id).toBeUndefined();
  });

  it('gives the alias to the first temporary profile only, and never takes it from the profile it names, saying so', async () => {
    const lines: string[] = [];
    emu = await startEmulator({ apiKeys: ['k'], log: (line) => lines.push(line) });
    await track({ attributes: [{ ...importing('t1'), push_tokens: [{ app_id: 'app', token: 't1' }, { app_id: 'app', token: 't2' }] }] });
    await track({ attributes: [importing('t3')] });
    const users = await exported({ user_aliases: [alias] });
    expect(users.map((u: Json) => u.push_tokens.map((t: Json) => t.token))).toEqual([['t1']]);
    expect(emu.store.counts().profiles).toBe(3);
    expect(lines.filter((line) => line.includes('user_alias'))).toEqual([
      expect.stringMatching(/user_alias .* already names a profile; the temporary profile of push token "t3" is made without it/),
    ]);
  });
});

describe('a null property value', () => {
  it('is taken on an event and on a purchase alike, and kept', async () => {
    emu = await startEmulator({ apiKeys: ['k'] });
    const r = await track({
      events: [{ external_id: 'u8', name: 'e', time: TIME, properties: { a: null } }],
      purchases: [{ external_id: 'u8', product_id: 'p', currency: 'USD', price: 1, time: TIME, properties: { a: null } }],
    });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({ message: 'success', events_processed: 1, purchases_processed: 1 });
    const id = emu.store.profileByExternalId('u8')!.id;
    expect(emu.store.eventsOf(id).map((e) => e.properties)).toEqual([{ a: null }]);
    expect(emu.store.purchasesOf(id).map((p) => p.properties)).toEqual([{ a: null }]);
  });
});

describe('purchases counted by quantity (decisions.md: a purchase of quantity X counts as X purchases)', () => {
  const get = async (path: string): Promise<string> => (await fetch(`${emu!.url}${path}`)).text();

  it('in the web view, its profile page and the stored figure of /metrics', async () => {
    emu = await startEmulator({ apiKeys: ['k'] });
    const r = await track({
      purchases: [
        { external_id: 'u', product_id: 'p', currency: 'USD', price: 1, quantity: 3, time: TIME },
        { external_id: 'u', product_id: 'q', currency: 'USD', price: 1, time: TIME },
      ],
    });
    // the answer still counts purchase objects
    expect(r.body).toEqual({ message: 'success', purchases_processed: 2 });
    expect(await get('/_track/')).toContain('1 profile, 0 events, 4 purchases');
    const serviceId = emu.store.profileByExternalId('u')!.serviceId;
    expect(await get(`/_track/?profile=${serviceId}`)).toContain('<h2 id="purchases">Purchases (4)</h2>');
    expect(await get('/metrics')).toMatch(/^track_emulator_stored\{kind="purchases"\} 4$/m);
  });
});

describe('emails the service refuses (whitespace, a period at either end of the local part, a domain not in Punycode)', () => {
  it('refuses them as a field and as an identifier, naming what is wrong, and stores nothing trimmed', async () => {
    emu = await startEmulator({ apiKeys: ['k'] });
    const r = await track({
      attributes: [
        { external_id: 'u1', email: 'ann@example.com ' },
        { external_id: 'u2', email: '\tann@example.com' },
        { external_id: 'u3', email: 'ann.@example.com' },
        { external_id: 'u5', email: 'ann@exämple.com' },
        { email: 'bo@example.com\r\n', first_name: 'Bo' },
        { external_id: 'u6', email: 'ann@example.com' },
      ],
      events: [{ email: '\u00a0bo@example.com', name: 'e', time: TIME }],
    });
    expect(r.status).toBe(201);
    expect(r.body.attributes_processed).toBe(1);
    expect(r.body.events_processed).toBe(0);
    expect(r.body.errors).toEqual([
      { type: 'email: is not a valid email address (it has a space at its end), got "ann@example.com "', input_array: 'attributes', index: 0 },
      { type: 'email: is not a valid email address (it has a tab at its start), got "\\tann@example.com"', input_array: 'attributes', index: 1 },
      { type: 'email: is not a valid email address (the part before the @ ends with a period), got "ann.@example.com"', input_array: 'attributes', index: 2 },
      { type: 'email: is not a valid email address (its domain is not ASCII: give it in Punycode, xn--...), got "ann@exämple.com"', input_array: 'attributes', index: 3 },
      { type: 'email: is not a valid email address (it has a line break at its end), got "bo@example.com\\r\\n"', input_array: 'attributes', index: 4 },
      { type: 'email: is not a valid email address (it has a no-break space (U+00A0) at its start), got "\u00a0bo@example.com"', input_array: 'events', index: 0 },
    ]);
    expect(await exported({ external_ids: ['u1', 'u2', 'u3', 'u5'] })).toEqual([]);
    expect((await exported({ email_address: 'bo@example.com' }))).toEqual([]);
    // the one valid email is the only one stored, as sent
    expect((await exported({ email_address: 'ann@example.com' })).map((u: Json) => [u.external_id, u.email])).toEqual([['u6', 'ann@example.com']]);
  });
});
