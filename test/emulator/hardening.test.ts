// Bad and hostile input through real HTTP: size, content type, JSON, nesting, slow clients.
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/index.js';

let emu: Emulator | undefined;
afterEach(async () => {
  await emu?.close();
  emu = undefined;
});

async function raw(e: Emulator, body: string | Buffer, headers: Record<string, string> = {}) {
  const res = await fetch(`${e.url}/users/track`, {
    method: 'POST',
    headers: { authorization: `Bearer ${e.apiKey}`, 'content-type': 'application/json', ...headers },
    body,
  });
  return { status: res.status, body: (await res.json()) as { message: string; errors: string[] } };
}

describe('hardening', () => {
  it('answers 413 for a body over 4 MiB by default, in the fatal shape', async () => {
    emu = await startEmulator();
    const big = JSON.stringify({ attributes: [{ external_id: 'u', blob: 'x'.repeat(4 * 1024 * 1024) }] });
    const r = await raw(emu, big);
    expect(r.status).toBe(413);
    expect(r.body.errors).toEqual([r.body.message]);
    expect(emu.store.counts().profiles).toBe(0);
  });

  it('answers 415 for a content type that is not JSON', async () => {
    emu = await startEmulator();
    expect((await raw(emu, '{"attributes":[]}', { 'content-type': 'text/plain' })).status).toBe(415);
  });

  it('answers 400 for malformed JSON', async () => {
    emu = await startEmulator();
    expect((await raw(emu, '{"attributes":[{"external_id":"u",')).status).toBe(400);
  });

  it('refuses, item by item, too deep nesting, too long nested arrays and text that is not valid Unicode', async () => {
    emu = await startEmulator();
    const deep = `{"attributes":[{"external_id":"ok","a":1},{"external_id":"u","d":${'['.repeat(100_000)}${']'.repeat(100_000)}}]}`;
    const d = (await raw(emu, deep)) as unknown as { status: number; body: { errors: { type: string; index: number }[] } };
    expect(d.status).toBe(201);
    expect(d.body.errors).toEqual([{ type: 'd: nests deeper than 32 levels', input_array: 'attributes', index: 1 }]);
    const long = JSON.stringify({ events: [{ external_id: 'u', name: 'e', time: '2024-01-01T00:00:00Z', properties: { objs: Array.from({ length: 20_000 }, () => ({ a: 1 })) } }] });
    const l = (await raw(emu, long)) as unknown as { status: number; body: { errors: { type: string }[] } };
    expect(l.body.errors[0].type).toMatch(/^properties: .*array/);
    // a lone surrogate cannot be stored as UTF-8: refused, not garbled
    const s = (await raw(emu, '{"attributes":[{"external_id":"s\\ud800","a":1}]}')) as unknown as { body: { errors: { type: string }[] } };
    expect(s.body.errors[0].type).toMatch(/^external_id: .*Unicode/);
    expect(emu.store.counts().profiles).toBe(1);
    expect(emu.store.profileByExternalId('ok')).toBeDefined();
  });

  it('ignores unknown top-level keys whatever they hold', async () => {
    emu = await startEmulator();
    const partner = JSON.parse(`${'['.repeat(40)}1${']'.repeat(40)}`);
    const r = await raw(emu, JSON.stringify({ attributes: [{ external_id: 'u', a: 1 }], partner, other: Array(20_000).fill(1) }));
    expect(r.status).toBe(201);
  });

  it('stores a custom attribute named __proto__ as any other', async () => {
    emu = await startEmulator();
    const r = await raw(emu, '{"attributes":[{"external_id":"p","__proto__":{"polluted":1},"plain":1}]}');
    expect(r.status).toBe(201);
    const exported = await fetch(`${emu.url}/users/export/ids`, {
      method: 'POST',
      headers: { authorization: `Bearer ${emu.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ external_ids: ['p'] }),
    }).then((x) => x.text());
    expect(exported).toContain('"custom_attributes":{"__proto__":{"polluted":1},"plain":1}');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('takes a base URL written with a trailing slash and a query string', async () => {
    emu = await startEmulator();
    const res = await fetch(`${emu.url}//users/track/?source=ci`, {
      method: 'POST',
      headers: { authorization: `Bearer ${emu.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ attributes: [{ external_id: 'u', a: 1 }] }),
    });
    expect(res.status).toBe(201);
    expect(emu.store.profileByExternalId('u')).toBeDefined();
  });

  it('cuts off a client that never finishes its request', async () => {
    emu = await startEmulator({ requestTimeoutMs: 300 });
    const { port } = emu;
    const closedAfter = await new Promise<number>((resolve) => {
      const t0 = Date.now();
      const socket = connect(port, '127.0.0.1', () => {
        socket.write('POST /users/track HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"attri');
      });
      socket.on('data', () => {});
      socket.on('error', () => {});
      socket.on('close', () => resolve(Date.now() - t0));
    });
    expect(closedAfter).toBeLessThan(10_000);
  });
});
