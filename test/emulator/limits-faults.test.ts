// Rate limits and injected faults through real HTTP on port 0 (the library API starts the server).
import { afterEach, describe, expect, it } from 'vitest';
import { FAULT_HEADER, startEmulator, type Emulator, type EmulatorOptions } from '../../src/index.js';
import { postJson } from '../helpers/cli.js';

let emu: Emulator | undefined;
afterEach(async () => {
  await emu?.close();
  emu = undefined;
});

async function start(options: EmulatorOptions): Promise<Emulator> {
  emu = await startEmulator(options);
  return emu;
}

const attrs = (id: string) => ({ attributes: [{ external_id: id, a: 1 }] });
const track = (e: Emulator, body: unknown, headers: Record<string, string> = {}, key = e.apiKey) =>
  postJson(`${e.url}/users/track`, key, body, headers);

describe('rate limits', () => {
  it('counts down in the headers, refuses the request over the limit with 429 and Retry-After, and applies nothing of it', async () => {
    const e = await start({ rateLimit: '3/1h' });
    const seen = [];
    for (let i = 0; i < 3; i += 1) seen.push(await track(e, attrs(`ok${i}`)));
    expect(seen.map((r) => r.status)).toEqual([201, 201, 201]);
    expect(seen.map((r) => r.headers.get('x-ratelimit-remaining'))).toEqual(['2', '1', '0']);
    expect(seen[0].headers.get('x-ratelimit-limit')).toBe('3');
    const refused = await track(e, attrs('refused'));
    expect(refused.status).toBe(429);
    expect(refused.body.errors).toHaveLength(1);
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(3600);
    const reset = Number(refused.headers.get('x-ratelimit-reset'));
    expect(reset).toBeGreaterThan(Date.now() / 1000 - 1);
    expect(reset).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 3600);
    expect(e.store.profileByExternalId('refused')).toBeUndefined();
    expect(e.store.counts().profiles).toBe(3);
  });

  it('limits each key on its own', async () => {
    const e = await start({ apiKeys: ['a', 'b'], rateLimit: '1/1h' });
    expect((await track(e, attrs('x'), {}, 'a')).status).toBe(201);
    expect((await track(e, attrs('y'), {}, 'a')).status).toBe(429);
    expect((await track(e, attrs('z'), {}, 'b')).status).toBe(201);
  });

  it('applies an hourly limit and describes it when it has fewer requests left', async () => {
    const e = await start({ rateLimit: '100/1s', hourlyLimit: 2 });
    const first = await track(e, attrs('a'));
    expect(first.headers.get('x-ratelimit-limit')).toBe('2');
    expect(first.headers.get('x-ratelimit-remaining')).toBe('1');
    await track(e, attrs('b'));
    const refused = await track(e, attrs('c'));
    expect(refused.status).toBe(429);
    const reset = Number(refused.headers.get('x-ratelimit-reset'));
    expect(reset % 3600).toBe(0);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('leaves /health out of rate limits and faults, with no key', async () => {
    const e = await start({ rateLimit: '1/10s', failRate: 1 });
    for (let i = 0; i < 3; i += 1) expect((await fetch(`${e.url}/health`)).status).toBe(200);
  });
});

describe('faults', () => {
  it('answers 500 or 503 at --fail-rate 1, applying nothing, and counts them', async () => {
    const e = await start({ failRate: 1 });
    const statuses = new Set<number>();
    for (let i = 0; i < 12; i += 1) statuses.add((await track(e, attrs(`u${i}`))).status);
    expect([...statuses].every((s) => s === 500 || s === 503)).toBe(true);
    expect(e.store.counts().profiles).toBe(0);
    expect(e.faults.status).toBe(12);
  });

  it('closes the connection unanswered at --drop-rate 1, applying nothing', async () => {
    const e = await start({ dropRate: 1 });
    await expect(track(e, attrs('u'))).rejects.toThrow();
    expect(e.store.counts().profiles).toBe(0);
    expect(e.faults.drop).toBe(1);
  });

  it('delays answers by --latency', async () => {
    const e = await start({ latency: '150' });
    const t0 = performance.now();
    expect((await track(e, attrs('u'))).status).toBe(201);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(140);
    expect(e.faults.latency).toBe(1);
  });

  it('forces one outcome per request with the fault header', async () => {
    const e = await start({});
    expect((await track(e, attrs('a'), { [FAULT_HEADER]: '503' })).status).toBe(503);
    const limited = await track(e, attrs('b'), { [FAULT_HEADER]: '429' });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).not.toBeNull();
    await expect(track(e, attrs('c'), { [FAULT_HEADER]: 'drop' })).rejects.toThrow();
    expect(e.store.counts().profiles).toBe(0);
    // applied, then the connection closes: the outcome a client cannot know
    await expect(track(e, attrs('d'), { [FAULT_HEADER]: 'drop-after-commit' })).rejects.toThrow();
    expect(e.store.profileByExternalId('d')).toBeDefined();
    expect(e.faults).toMatchObject({ status: 2, drop: 1, dropAfterCommit: 1 });
  });

  it('logs faults without ever writing an API key', async () => {
    const lines: string[] = [];
    const e = await start({ apiKeys: ['secret-key-123'], failRate: 1, log: (l) => lines.push(l) });
    await track(e, attrs('u'));
    await postJson(`${e.url}/users/track`, 'wrong-key-456', attrs('u'));
    expect(lines.some((l) => /fault/.test(l))).toBe(true);
    expect(lines.join('\n')).not.toMatch(/secret-key-123|wrong-key-456/);
  });
});
