import { describe, expect, it } from 'vitest';
import type { PostResult } from '../../src/transport/http-client.js';
import { classifyResult, serverMessage } from '../../src/transport/retry-policy.js';

const NOW = Date.UTC(2026, 0, 1);
const answer = (status: number, body: unknown = '', headers: Record<string, string> = {}): PostResult => ({
  kind: 'response',
  status,
  headers,
  body: typeof body === 'string' ? body : JSON.stringify(body),
});
const fatalShape = (message: string) => ({ message, errors: [message] });

describe('classifyResult', () => {
  it('accepts 2xx and keeps the minor errors', () => {
    const errors = [{ type: 'bad time', input_array: 'events', index: 1 }];
    expect(classifyResult(answer(201, { message: 'success', events_processed: 1, errors }), NOW)).toEqual({
      kind: 'accepted',
      response: { message: 'success', events_processed: 1, errors },
    });
  });

  it("takes a 2xx without the endpoint's success body for no answer of the endpoint, described for a person", () => {
    const page = '<html><body>Welcome to nginx!</body></html>';
    expect(classifyResult(answer(200, page, { 'content-type': 'text/html' }), NOW)).toEqual({
      kind: 'not-endpoint',
      status: 200,
      answer: `HTTP 200 (text/html): "${page}"`,
    });
    expect(classifyResult(answer(200, 'not json!'), NOW)).toEqual({ kind: 'not-endpoint', status: 200, answer: 'HTTP 200 (no content type): "not json!"' });
    // cut off, an object of another shape, an array, nothing
    for (const body of ['{"a":', '{"message":"queued"}', '[{"message":"success"}]', '']) {
      expect(classifyResult(answer(201, body, { 'content-type': 'application/json' }), NOW)).toMatchObject({ kind: 'not-endpoint', status: 201 });
    }
    expect(classifyResult(answer(204), NOW)).toMatchObject({ kind: 'not-endpoint', answer: 'HTTP 204 (no content type): an empty body' });
    // only the start of a long page
    const long = classifyResult(answer(200, `<html>${'x'.repeat(5_000)}</html>`), NOW);
    expect(long.kind === 'not-endpoint' && long.answer.length).toBeLessThan(120);
  });

  it('waits on 429 for Retry-After, else the reset', () => {
    expect(classifyResult(answer(429, fatalShape('slow down'), { 'retry-after': '3' }), NOW)).toEqual({ kind: 'rate-limited', waitMs: 3_000 });
    expect(classifyResult(answer(429, '', { 'x-ratelimit-reset': String(NOW / 1000 + 7) }), NOW)).toEqual({
      kind: 'rate-limited',
      waitMs: 7_000,
    });
    expect(classifyResult(answer(429), NOW)).toEqual({ kind: 'rate-limited', waitMs: undefined });
  });

  it('retries 5xx and 408, honouring a Retry-After as a floor', () => {
    expect(classifyResult(answer(503, fatalShape('down'), { 'retry-after': '2' }), NOW)).toEqual({
      kind: 'retry',
      reason: 'HTTP 503: down',
      minDelayMs: 2_000,
    });
    expect(classifyResult(answer(500), NOW)).toMatchObject({ kind: 'retry', reason: 'HTTP 500' });
    expect(classifyResult(answer(408), NOW)).toMatchObject({ kind: 'retry' });
  });

  it('stops on 401, 403 and 404 with a message a person can act on', () => {
    expect(classifyResult(answer(401, fatalShape('unknown key')), NOW)).toMatchObject({
      kind: 'fatal',
      status: 401,
      message: expect.stringContaining('unknown key'),
    });
    expect(classifyResult(answer(403, fatalShape('no permission')), NOW)).toMatchObject({
      kind: 'fatal',
      status: 403,
      message: expect.stringContaining('users.track'),
    });
    expect(classifyResult(answer(404), NOW)).toMatchObject({ kind: 'fatal', message: expect.stringContaining('--url') });
    expect(classifyResult(answer(301, '', { location: 'https://x/users/track' }), NOW)).toMatchObject({
      kind: 'fatal',
      message: expect.stringContaining('https://x/users/track'),
    });
  });

  it('rejects the items of other 4xx with the server message', () => {
    for (const status of [400, 413, 415, 422]) {
      expect(classifyResult(answer(status, fatalShape('provided external_id is blocklisted and not allowed')), NOW)).toEqual({
        kind: 'reject',
        status,
        message: `HTTP ${status}: provided external_id is blocklisted and not allowed`,
      });
    }
  });

  it('keeps the minor error entries of a 400 that refused every item, to join them back to each item', () => {
    const message = "Valid data must be provided in the 'attributes', 'events', or 'purchases' fields.";
    const errors = [{ type: 'dob: must be a real date', input_array: 'attributes', index: 0 }];
    expect(classifyResult(answer(400, { message, attributes_processed: 0, errors }), NOW)).toEqual({
      kind: 'reject',
      status: 400,
      message: `HTTP 400: ${message}`,
      errors,
    });
  });

  it('stops the run on a 400 for a request over the batch limit, naming the flags that set it', () => {
    for (const message of [
      'request has 75 items; at most 50 are allowed across attributes, events and purchases',
      'events has 80 items; at most 75 are allowed in one array',
      'Too many attributes in this request',
      'Exceeded maximum of 75 events per request',
    ]) {
      const verdict = classifyResult(answer(400, fatalShape(message)), NOW);
      expect(verdict, message).toMatchObject({ kind: 'fatal', status: 400, message: expect.stringContaining(message) });
      for (const flag of ['--limits', '--max-total', '--max-per-array']) expect((verdict as { message: string }).message).toContain(flag);
    }
    // other refusals stay rejects of their rows
    expect(classifyResult(answer(400, fatalShape('attributes: must be an array, got null')), NOW)).toMatchObject({ kind: 'reject' });
  });

  it('tells a request that never left from one that may have been applied', () => {
    expect(classifyResult({ kind: 'failed', sent: false, aborted: false, reason: 'ECONNREFUSED' }, NOW)).toMatchObject({ kind: 'retry' });
    expect(classifyResult({ kind: 'failed', sent: true, aborted: false, reason: 'other side closed' }, NOW)).toMatchObject({
      kind: 'unknown',
      reason: expect.stringContaining('other side closed'),
    });
    expect(classifyResult({ kind: 'failed', sent: true, aborted: true, reason: 'aborted' }, NOW)).toEqual({ kind: 'aborted', sent: true });
  });
});

describe('serverMessage', () => {
  it('takes message, else the first error, else short text', () => {
    expect(serverMessage(JSON.stringify({ message: 'm', errors: ['e'] }))).toBe('m');
    expect(serverMessage(JSON.stringify({ errors: ['e'] }))).toBe('e');
    expect(serverMessage('<html>\n  Bad   gateway </html>')).toBe('<html> Bad gateway </html>');
    expect(serverMessage('x'.repeat(500))).toHaveLength(203);
    expect(serverMessage('')).toBeUndefined();
  });
});
