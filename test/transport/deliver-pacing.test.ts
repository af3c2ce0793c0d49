import { afterEach, describe, expect, it } from 'vitest';
import { deliver } from '../../src/transport/deliver.js';
import type { TrackClient } from '../../src/transport/http-client.js';
import { maxInWindow, startFaultServer, type FaultServer } from '../helpers/fault-server.js';
import { buildPlan, fromArray } from './plan.js';
import { appliedCounts, clientFor, range, warmUp } from './deliver-setup.js';

let server: FaultServer;
let client: TrackClient;

afterEach(async () => {
  await client?.destroy();
  await server?.close();
});

describe('deliver: pacing', () => {
  it('never starts more than --rate requests in any one-second window', async () => {
    server = await startFaultServer();
    await warmUp(server);
    client = clientFor(server);
    // when each request was written to its connection, as the client saw it
    const sentAt: number[] = [];
    const watched = {
      endpoint: client.endpoint,
      post: (json: string, signal?: AbortSignal, onSent?: () => void) =>
        client.post(json, signal, () => {
          sentAt.push(performance.timeOrigin + performance.now());
          onSent?.();
        }),
    };
    const summary = await deliver(fromArray(buildPlan({ requests: 16, itemsPer: 2 })), { client: watched, concurrency: 8, rate: 10 });
    expect(summary.requestsSettled).toBe(16);
    expect(maxInWindow(sentAt, 1000)).toBe(10);
    // the server sees them a little later than they left, by varying amounts on a busy machine
    expect(maxInWindow(server.received.map((r) => r.at), 1000 - 50)).toBeLessThanOrEqual(10);
    // 16 starts at 10 per second need a second window
    expect(Math.max(...sentAt) - Math.min(...sentAt)).toBeGreaterThanOrEqual(1000);
  });

  it('pauses all sending after a 429, not only the refused request', async () => {
    server = await startFaultServer((r) => (r.index === 3 ? { kind: 'rate-limit', retryAfter: 1, remaining: 0, reset: 1 } : undefined));
    client = clientFor(server);
    const concurrency = 4;
    const plan = buildPlan({ requests: 40, itemsPer: 2 });
    let longestHold = 0;
    const summary = await deliver(fromArray(plan), {
      client,
      concurrency,
      onProgress: (p) => (longestHold = Math.max(longestHold, p.heldForMs)),
    });

    expect(longestHold).toBeGreaterThan(500); // progress can say "waiting for the rate limit"
    const refusedAt = server.received[3].doneAt as number;
    const during = server.received.filter((r) => r.at > refusedAt && r.at < refusedAt + 950);
    // only requests already on their way when the 429 came back may arrive during the pause
    expect(during.length).toBeLessThanOrEqual(concurrency - 1);
    expect(summary.rateLimited).toBe(1);
    expect(summary.retries).toBe(0); // a 429 is a wait, not a failure
    expect(summary.attempts).toBe(41);
    const counts = appliedCounts(server);
    expect([...counts.keys()].sort((a, b) => a - b)).toEqual(range(0, 79));
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
  });

  it('slows down from the rate-limit headers before the server has to refuse', async () => {
    // the server allows 6 requests per wall-clock second and says so on every answer
    const LIMIT = 6;
    const used = new Map<number, number>();
    let refused = 0;
    server = await startFaultServer(() => {
      const now = Date.now();
      const windowStart = Math.floor(now / 1000);
      const count = used.get(windowStart) ?? 0;
      const reset = String(windowStart + 1); // epoch seconds
      if (count >= LIMIT) {
        refused += 1;
        return { kind: 'rate-limit', retryAfter: 1, remaining: 0, reset: windowStart + 1 };
      }
      used.set(windowStart, count + 1);
      return {
        kind: 'ok',
        headers: { 'x-ratelimit-limit': String(LIMIT), 'x-ratelimit-remaining': String(LIMIT - count - 1), 'x-ratelimit-reset': reset },
      };
    });
    client = clientFor(server);
    const summary = await deliver(fromArray(buildPlan({ requests: 12, itemsPer: 2 })), { client, concurrency: 4 });
    expect(summary.requestsSettled).toBe(12);
    expect(refused).toBe(0);
    expect(summary.rateLimited).toBe(0);
  });
});
