// The request log's memory is bounded whatever the requests hold: huge identifiers, paths, bodies
// and many users a request; checked by the bytes the log counts and answers in GET /_track/requests.
import { afterEach, describe, expect, it } from 'vitest';
import { LOG_BYTES, LOGGED_BODY_BYTES, LOGGED_PATH_BYTES } from '../../src/emulator/request-log.js';
import { LOGGED_NAMES } from '../../src/emulator/request-log-users.js';
import { testHandler, type TestHandler } from '../helpers/handler.js';

let h: TestHandler;
afterEach(() => h?.close());

const answer = (query = '') => h.call('GET', `/_track/requests${query}`).body as { requests: Record<string, any>[]; log: { requests: number; bytes: number; max_bytes: number } };

describe('the request log in bytes', () => {
  it('keeps requests with a 3.9 MB external_id in a few KB each beside their cut bodies, and still finds them by it', () => {
    h = testHandler({ maxBodyBytes: 8 * 1024 * 1024 });
    const huge = 'x'.repeat(3_900_000);
    const body = (i: number) => ({ attributes: [{ external_id: `${huge}${i}`, plan: 'pro' }] });
    for (let i = 0; i < 100; i += 1) expect(h.track(body(i)).status).toBe(400);
    const { log } = answer();
    expect(log.requests).toBe(100);
    expect(log.max_bytes).toBe(LOG_BYTES);
    // each: its body cut to 64 KB, and a few KB more for the rest (the identifier kept as a digest)
    expect(log.bytes / 100).toBeLessThan(LOGGED_BODY_BYTES + 8 * 1024);
    expect(log.bytes / 100).toBeGreaterThan(LOGGED_BODY_BYTES);
    const found = answer(`?limit=1000&external_id=${huge}7`).requests;
    expect(found.map((r) => r.id)).toEqual([8]);
    expect(found[0]).toMatchObject({ status: 400, body_truncated: true, body_bytes: Buffer.byteLength(JSON.stringify(body(7))) });
  });

  it('cuts a long path as it cuts a body, and the message that repeats it', () => {
    h = testHandler();
    const path = `/users/${'é'.repeat(300_000)}`;
    expect(h.post(path, { attributes: [] }).status).toBe(404);
    const [entry] = answer().requests;
    expect(entry.path_truncated).toBe(true);
    expect(Buffer.byteLength(entry.path)).toBeLessThanOrEqual(LOGGED_PATH_BYTES);
    expect(Buffer.byteLength(entry.path)).toBeGreaterThan(LOGGED_PATH_BYTES - 4);
    expect(entry.path).not.toContain('\uFFFD');
    expect(path.startsWith(entry.path)).toBe(true);
    expect(entry.message.length).toBeLessThanOrEqual(1024);
    expect(answer().log.bytes).toBeLessThan(16 * 1024);
  });

  it(`keeps at most ${LOGGED_NAMES} users a request, and finds a request by one of them`, () => {
    h = testHandler();
    const attributes = Array.from({ length: 400 }, (_, i) => ({ external_id: `user-${i}` }));
    expect(h.track({ attributes }).status).toBe(400); // over the batch limit, but logged with whom it names
    expect(answer('?external_id=user-0').requests).toHaveLength(1);
    expect(answer(`?external_id=user-${LOGGED_NAMES - 1}`).requests).toHaveLength(1);
    expect(answer(`?external_id=user-${LOGGED_NAMES}`).requests).toHaveLength(0);
  });

  it('past its bytes, the oldest requests lose their bodies, then go; the newest stay whole', () => {
    h = testHandler({ requestLog: 1_000_000, maxBodyBytes: 8 * 1024 * 1024 });
    // each request names 256 users by 250-character ids: about 140 KB counted besides its cut body
    const request = (n: number) => ({ attributes: Array.from({ length: 300 }, (_, i) => ({ external_id: `${n}-${i}-`.padEnd(250, 'y') })) });
    let most = 0;
    for (let n = 0; n < 1000; n += 1) {
      h.track(request(n));
      most = Math.max(most, answer('?limit=1').log.bytes);
    }
    const { requests, log } = answer('?limit=1000000');
    expect(most).toBeLessThanOrEqual(LOG_BYTES);
    expect(log.requests).toBeLessThan(1000);
    expect(log.requests).toBeGreaterThan(100);
    expect(requests[0].id).toBe(1000);
    expect(requests[0].body_truncated).toBe(true);
    expect(requests.at(-1)!.id).toBe(1000 - log.requests + 1);
    expect(requests.at(-1)!.body_omitted).toMatch(/dropped to keep the log within 128 MiB/);
    expect(answer(`?external_id=${'999-0-'.padEnd(250, 'y')}`).requests.map((r) => r.id)).toEqual([1000]);
  });
});
