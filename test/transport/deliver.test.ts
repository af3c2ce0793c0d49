import { afterEach, describe, expect, it } from 'vitest';
import type { PlannedRequest } from '../../src/model/request.js';
import { deliver } from '../../src/transport/deliver.js';
import type { TrackClient } from '../../src/transport/http-client.js';
import { startFaultServer, type FaultAction, type FaultServer } from '../helpers/fault-server.js';
import { buildPlan, fromArray, lineOf } from './plan.js';
import {
  KEY,
  appliedCounts,
  clientFor,
  collectRejects,
  range,
  recordingJournal,
  rowsOfBody,
  wait,
} from './deliver-setup.js';

let server: FaultServer;
let client: TrackClient;

afterEach(async () => {
  await client?.destroy();
  await server?.close();
});

async function setUp(script?: (r: Parameters<Parameters<FaultServer['script']>[0]>[0]) => FaultAction | undefined) {
  server = await startFaultServer(script);
  client = clientFor(server);
}

describe('deliver: the plain path', () => {
  it('delivers every row exactly once, journals every row, and reports the counts', async () => {
    await setUp();
    const plan = buildPlan({ requests: 40, itemsPer: 5 });
    const journal = recordingJournal();
    const { rejects, onReject } = collectRejects();
    const progress: number[] = [];
    const summary = await deliver(fromArray(plan), {
      client,
      concurrency: 6,
      journal,
      onReject,
      onProgress: (p) => progress.push(p.requestsSettled),
    });

    const counts = appliedCounts(server);
    expect([...counts.keys()].sort((a, b) => a - b)).toEqual(range(0, 199));
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    expect(rejects).toEqual([]);
    expect(journal.lines).toEqual(range(lineOf(0), lineOf(199)));
    expect(journal.flushes).toBeGreaterThan(0);
    expect(summary).toMatchObject({
      requestsPulled: 40,
      requestsSent: 40,
      requestsSettled: 40,
      requestsAbandoned: 0,
      attempts: 40,
      retries: 0,
      rateLimited: 0,
      unknownOutcomes: 0,
      rowsPossiblyDuplicated: 0,
      stopped: false,
      aborted: false,
      items: {
        attributes: { sent: 100, accepted: 100, rejected: 0 },
        events: { sent: 100, accepted: 100, rejected: 0 },
        purchases: { sent: 0, accepted: 0, rejected: 0 },
      },
    });
    expect(summary.fatal).toBeUndefined();
    expect(progress.at(-1)).toBe(40);
    expect(server.received.every((r) => r.headers.authorization === `Bearer ${KEY}`)).toBe(true);
    expect(JSON.stringify(summary)).not.toContain(KEY);
  });

  it('keeps no more than `concurrency` requests on the wire', async () => {
    await setUp((r) => ({ kind: 'ok', delayMs: 5 + (r.index % 4) * 5 }));
    const summary = await deliver(fromArray(buildPlan({ requests: 30, itemsPer: 2 })), { client, concurrency: 3 });
    expect(summary.requestsSettled).toBe(30);
    // the most requests the server held open at one moment
    const events = server.received.flatMap((r) => [
      { t: r.at, d: 1 },
      { t: r.doneAt as number, d: -1 },
    ]);
    events.sort((a, b) => a.t - b.t || a.d - b.d);
    let open = 0;
    let most = 0;
    for (const e of events) {
      open += e.d;
      most = Math.max(most, open);
    }
    expect(most).toBe(3);
  });

  it('waits for a slow reader while answers come back, and takes every request', async () => {
    await setUp();
    const plan = buildPlan({ requests: 12, itemsPer: 2 });
    async function* slow(): AsyncGenerator<PlannedRequest> {
      for (const request of plan) {
        await wait(15); // answers arrive while the next request is still being read
        yield request;
      }
    }
    const summary = await deliver(slow(), { client, concurrency: 4 });
    expect(summary.requestsPulled).toBe(12);
    expect(summary.requestsSettled).toBe(12);
    expect(appliedCounts(server).size).toBe(24);
  });

  it('reads ahead no further than it needs to keep the slots busy', async () => {
    await setUp(() => ({ kind: 'ok', delayMs: 150 }));
    const plan = buildPlan({ requests: 50, itemsPer: 1 });
    let pulled = 0;
    async function* counting(): AsyncGenerator<PlannedRequest> {
      for (const request of plan) {
        pulled += 1;
        yield request;
      }
    }
    const stop = new AbortController();
    const run = deliver(counting(), { client, concurrency: 3, stopSignal: stop.signal });
    await wait(80); // the first answers are still 70 ms away
    const pulledWhileBusy = pulled;
    stop.abort();
    await run;
    expect(pulledWhileBusy).toBeGreaterThanOrEqual(3);
    expect(pulledWhileBusy).toBeLessThanOrEqual(2 * 3 + 1);
  });
});

describe('deliver: one user at a time', () => {
  it('never has two requests for one user in flight, and keeps each user in plan order', async () => {
    await setUp((r) => ({ kind: 'ok', delayMs: (r.index * 7) % 13 }));
    // 5 rows per request, 10 rows per user: requests 2k and 2k+1 share a user; 4 users cycle
    const plan = buildPlan({ requests: 24, itemsPer: 5, userOf: (row) => `u${Math.floor(row / 10) % 4}` });
    const summary = await deliver(fromArray(plan), { client, concurrency: 8 });
    expect(summary.requestsSettled).toBe(24);

    const userOfRequest = (body: PlannedRequest['body'] | undefined) =>
      String((body?.attributes?.[0] ?? body?.events?.[0])?.external_id);
    const byUser = new Map<string, typeof server.received>();
    for (const r of server.received) {
      const user = userOfRequest(r.body);
      byUser.set(user, [...(byUser.get(user) ?? []), r]);
    }
    expect(byUser.size).toBe(4);
    for (const requests of byUser.values()) {
      const firstRows = requests.map((r) => rowsOfBody(r.body)[0]);
      expect(firstRows).toEqual([...firstRows].sort((a, b) => a - b)); // plan order
      for (let i = 1; i < requests.length; i += 1) {
        expect(requests[i].at).toBeGreaterThanOrEqual(requests[i - 1].doneAt as number); // no overlap
      }
    }
    // the test means something only if different users did overlap
    const overlapping = server.received.some((a, i) =>
      server.received.some((b, j) => i !== j && b.at < (a.doneAt as number) && a.at < (b.doneAt as number)),
    );
    expect(overlapping).toBe(true);
  });
});
