// Requests node's HTTP parser refuses before the handler sees them are answered, in the fatal shape,
// rather than cut off: 431 for headers over the limit, 400 for what is not HTTP.
import { connect } from 'node:net';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/server.js';

let emu: Emulator;
beforeEach(async () => (emu = await startEmulator({})));
afterEach(() => emu.close());

/** Sends text on a fresh connection and returns all that comes back until the server closes it. */
function exchange(text: string): Promise<{ head: string; body: string }> {
  return new Promise((resolve, reject) => {
    let received = '';
    const socket = connect(emu.port, '127.0.0.1', () => socket.write(text));
    socket.on('data', (d: Buffer) => (received += d.toString('utf8')));
    socket.on('error', reject);
    socket.on('close', () => {
      const at = received.indexOf('\r\n\r\n');
      resolve({ head: received.slice(0, at), body: received.slice(at + 4) });
    });
  });
}

it('answers 431 to request headers larger than the limit, and goes on serving', async () => {
  const { head, body } = await exchange(`POST /users/track HTTP/1.1\r\nHost: x\r\nX-Padding: ${'a'.repeat(64 * 1024)}\r\n\r\n`);
  expect(head).toMatch(/^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/);
  expect(head.toLowerCase()).toContain('content-type: application/json');
  const parsed = JSON.parse(body) as { message: string; errors: string[] };
  expect(parsed.message).toMatch(/request headers are larger than \d+ bytes/);
  expect(parsed.errors).toEqual([parsed.message]);
  expect((await fetch(`${emu.url}/health`)).status).toBe(200);
});

it('answers 431 to a client such as fetch, which then reads the answer', async () => {
  const res = await fetch(`${emu.url}/users/track`, {
    method: 'POST',
    headers: { authorization: `Bearer ${emu.apiKey}`, 'content-type': 'application/json', 'x-padding': 'a'.repeat(32 * 1024) },
    body: '{}',
  });
  expect(res.status).toBe(431);
  expect(((await res.json()) as { message: string }).message).toMatch(/request headers are larger/);
});

it('answers 400 to a request that is not HTTP', async () => {
  const { head, body } = await exchange('NOT HTTP AT ALL\r\n\r\n');
  expect(head).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
  expect(JSON.parse(body)).toEqual({ message: expect.stringMatching(/malformed HTTP request/), errors: [expect.any(String)] });
});
