import { createServer as createHttpServer } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { UsageError } from '../../src/errors.js';
import { createTrackClient, resolveEndpoint, type TrackClient } from '../../src/transport/http-client.js';
import { classifyResult } from '../../src/transport/retry-policy.js';
import { closedPort } from '../helpers/cli.js';
import { startFaultServer, type FaultServer } from '../helpers/fault-server.js';

const KEY = 'sk-test-0123456789abcdef';
let server: FaultServer | undefined;
let client: TrackClient | undefined;

afterEach(async () => {
  await client?.destroy();
  await server?.close();
  client = undefined;
  server = undefined;
});

describe('resolveEndpoint', () => {
  it('appends /users/track to a base URL, keeps a full one, drops credentials', () => {
    expect(resolveEndpoint('https://rest.example.com').href).toBe('https://rest.example.com/users/track');
    expect(resolveEndpoint('https://rest.example.com/api/').href).toBe('https://rest.example.com/api/users/track');
    expect(resolveEndpoint('http://127.0.0.1:9/users/track').href).toBe('http://127.0.0.1:9/users/track');
    expect(resolveEndpoint('https://u:p@rest.example.com').href).toBe('https://rest.example.com/users/track');
  });

  it('refuses what is not an http(s) URL', () => {
    expect(() => resolveEndpoint('rest.example.com')).toThrow(UsageError);
    expect(() => resolveEndpoint('ftp://rest.example.com')).toThrow(/http:\/\/ or https:\/\//);
  });
});

describe('track client', () => {
  it('posts JSON with the bearer key and reads the answer', async () => {
    server = await startFaultServer();
    client = createTrackClient({ url: server.url, apiKey: KEY });
    const result = await client.post(JSON.stringify({ events: [{ external_id: 'a', name: 'x', time: '2026-01-01T00:00:00Z' }] }));
    expect(result).toMatchObject({ kind: 'response', status: 201 });
    expect(result.kind === 'response' && JSON.parse(result.body)).toEqual({ message: 'success', events_processed: 1 });
    const [seen] = server.received;
    expect(seen.method).toBe('POST');
    expect(seen.url).toBe('/users/track');
    expect(seen.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(seen.headers['content-type']).toBe('application/json');
    expect(client.endpoint).toBe(`${server.url}/users/track`);
  });

  it('passes rate-limit headers through, by lower-case name', async () => {
    server = await startFaultServer(() => ({ kind: 'rate-limit', retryAfter: 2, remaining: 0 }));
    client = createTrackClient({ url: server.url, apiKey: KEY });
    const result = await client.post('{}');
    expect(result).toMatchObject({ kind: 'response', status: 429, headers: { 'retry-after': '2', 'x-ratelimit-remaining': '0' } });
  });

  it('reports a connection broken after the request was sent as sent', async () => {
    server = await startFaultServer(() => ({ kind: 'destroy' }));
    client = createTrackClient({ url: server.url, apiKey: KEY });
    const result = await client.post('{"attributes":[]}');
    expect(result).toMatchObject({ kind: 'failed', sent: true, aborted: false });
    expect(server.received[0].raw).toBe('{"attributes":[]}');
  });

  it('reports an unanswered request that timed out as sent', async () => {
    server = await startFaultServer(() => ({ kind: 'hang' }));
    client = createTrackClient({ url: server.url, apiKey: KEY, timeoutMs: 100 });
    const started = performance.now();
    const result = await client.post('{}');
    expect(result).toMatchObject({ kind: 'failed', sent: true, aborted: false, cause: 'timeout' });
    expect(result.kind === 'failed' && result.reason).toBe('no answer within 0.1 s, the --request-timeout');
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it('holds a request to one deadline, however slowly the server sends its answer', async () => {
    // headers at once, then a byte of body every 50 ms, never ending: no quiet spell for undici's timeouts
    const trickle = createHttpServer((req, res) => {
      req.resume();
      res.writeHead(201, { 'content-type': 'application/json' });
      const drip = setInterval(() => res.write(' '), 50);
      res.on('close', () => clearInterval(drip));
    });
    await new Promise<void>((r) => trickle.listen(0, '127.0.0.1', r));
    try {
      client = createTrackClient({ url: `http://127.0.0.1:${(trickle.address() as { port: number }).port}`, apiKey: KEY, timeoutMs: 300 });
      const started = performance.now();
      // the status came, but not the rest of the answer: past the deadline the outcome is unknown
      const result = await client.post('{}');
      expect(result).toMatchObject({ kind: 'failed', sent: true, aborted: false, cause: 'timeout' });
      expect(classifyResult(result, Date.now())).toEqual({ kind: 'unknown', reason: 'no answer within 0.3 s, the --request-timeout' });
      expect(performance.now() - started).toBeLessThan(5_000);
    } finally {
      trickle.closeAllConnections();
      await new Promise((r) => trickle.close(r));
    }
  });

  it('says of an answer whose connection broke in its body that it was cut off; a 2xx so cut has an unknown outcome', async () => {
    const cutting = createHttpServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(201, { 'content-type': 'application/json', 'content-length': '40' });
        res.write('{"message":', () => setTimeout(() => res.socket?.destroy(), 20));
      });
    });
    await new Promise<void>((r) => cutting.listen(0, '127.0.0.1', r));
    try {
      client = createTrackClient({ url: `http://127.0.0.1:${(cutting.address() as { port: number }).port}`, apiKey: KEY });
      const result = await client.post('{}');
      expect(result).toMatchObject({ kind: 'response', status: 201, body: '{"message":', cutOff: true });
      expect(classifyResult(result, Date.now())).toEqual({ kind: 'unknown', reason: 'connection broke while the answer came (HTTP 201)' });
    } finally {
      cutting.closeAllConnections();
      await new Promise((r) => cutting.close(r));
    }
  });

  it('tells a server that does not speak TLS from other failures, and classifies it as fatal', async () => {
    server = await startFaultServer();
    client = createTrackClient({ url: server.url.replace('http://', 'https://'), apiKey: KEY });
    const result = await client.post('{}');
    expect(result).toMatchObject({ kind: 'failed', sent: false, cause: 'no-tls' });
    expect(classifyResult(result, Date.now())).toEqual({ kind: 'fatal', message: 'the server does not speak TLS: try http:// instead of https:// in --url' });
    expect(server.received).toHaveLength(0);
  });

  it('reports a refused connection as not sent', async () => {
    client = createTrackClient({ url: `http://127.0.0.1:${await closedPort()}`, apiKey: KEY });
    const result = await client.post('{}');
    expect(result).toMatchObject({ kind: 'failed', sent: false, aborted: false });
    expect(result.kind === 'failed' && result.reason).toMatch(/ECONNREFUSED/);
  });

  it('ends a request when its signal fires', async () => {
    server = await startFaultServer(() => ({ kind: 'hang' }));
    client = createTrackClient({ url: server.url, apiKey: KEY });
    const controller = new AbortController();
    const pending = client.post('{}', controller.signal);
    while (server.received.length === 0) await new Promise((r) => setTimeout(r, 5));
    controller.abort();
    expect(await pending).toMatchObject({ kind: 'failed', sent: true, aborted: true });
    expect(await client.post('{}', AbortSignal.abort())).toMatchObject({ kind: 'failed', sent: false, aborted: true });
  });

  it('never lets the key out, even when the server echoes it', async () => {
    server = await startFaultServer(() => ({ kind: 'status', status: 401, message: `unknown key ${KEY}` }));
    client = createTrackClient({ url: server.url, apiKey: KEY });
    const result = await client.post('{}');
    expect(JSON.stringify(result)).not.toContain(KEY);
    expect(result.kind === 'response' && result.body).toContain('unknown key [redacted]');
  });

  it('refuses a missing or unsendable key without echoing it', () => {
    expect(() => createTrackClient({ url: 'http://127.0.0.1:1', apiKey: '' })).toThrow(UsageError);
    let message = '';
    try {
      createTrackClient({ url: 'http://127.0.0.1:1', apiKey: 'secret\r\nX-Evil: 1' });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/cannot be sent/);
    expect(message).not.toContain('secret');
  });
});
