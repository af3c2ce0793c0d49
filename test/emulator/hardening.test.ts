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

  it('answers 400 for malformed JSON, too deep nesting and too long nested arrays', async () => {
    emu = await startEmulator();
    expect((await raw(emu, '{"attributes":[{"external_id":"u",')).status).toBe(400);
    const deep = `{"attributes":[{"external_id":"u","d":${'['.repeat(100_000)}${']'.repeat(100_000)}}]}`;
    const d = await raw(emu, deep);
    expect(d.status).toBe(400);
    const long = JSON.stringify({ attributes: [{ external_id: 'u', objs: Array.from({ length: 20_000 }, () => ({ a: 1 })) }] });
    const l = await raw(emu, long);
    expect(l.status).toBe(400);
    expect(l.body.message).toMatch(/array/);
    expect(emu.store.counts().profiles).toBe(0);
    expect((await fetch(`${emu.url}/health`)).status).toBe(200);
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
