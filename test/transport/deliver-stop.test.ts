import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { deliver } from '../../src/transport/deliver.js';
import type { TrackClient } from '../../src/transport/http-client.js';
import { openJournal } from '../../src/records/journal.js';
import { startFaultServer, type FaultServer } from '../helpers/fault-server.js';
import { buildPlan, fromArray, lineOf } from './plan.js';
import { appliedCounts, clientFor, range, recordingJournal, wait } from './deliver-setup.js';

let server: FaultServer;
let client: TrackClient;
const TARGET = 'http://127.0.0.1:1/users/track';
let dir: string | undefined;

afterEach(async () => {
  await client?.destroy();
  await server?.close();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

describe('deliver: stopping and resuming', () => {
  it('on stop, lets requests in flight finish and journals them; a resumed run then delivers each row once', async () => {
    dir = await mkdtemp(join(tmpdir(), 'track-resume-'));
    const input = join(dir, 'users.csv');
    await writeFile(input, 'external_id\n' + range(0, 149).map((n) => `u${n}\n`).join(''));
    const journalPath = join(dir, 'users.csv.journal');
    const stop = new AbortController();
    server = await startFaultServer((r) => {
      if (r.index === 9) stop.abort(); // Ctrl-C while requests are on the wire
      return { kind: 'ok', delayMs: 30 };
    });
    client = clientFor(server);

    const first = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: false });
    const interrupted = await deliver(fromArray(buildPlan({ requests: 30, itemsPer: 5, file: input })), {
      client,
      concurrency: 4,
      journal: first,
      stopSignal: stop.signal,
    });
    await first.close();
    expect(interrupted.stopped).toBe(true);
    expect(interrupted.fatal).toBeUndefined();
    // every request the server got was answered and journaled; nothing was sent after the stop
    expect(interrupted.requestsSettled).toBe(server.received.length);
    expect(server.received.length).toBeGreaterThanOrEqual(10);
    expect(server.received.length).toBeLessThan(30);
    expect(interrupted.requestsSettled + interrupted.requestsAbandoned + (interrupted.notDelivered['stopped before it was sent'] ?? 0)).toBe(interrupted.requestsPulled);

    const second = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: true });
    expect(second.settledBefore(input)).toBe(interrupted.requestsSettled * 5);
    const rest = buildPlan({ requests: 30, itemsPer: 5, file: input, skip: (file, line) => second.skipRow(file, line) });
    expect(rest.length).toBe(30 - interrupted.requestsSettled);
    server.script(() => undefined);
    const resumed = await deliver(fromArray(rest), { client, concurrency: 4, journal: second });
    await second.close();
    expect(resumed.fatal).toBeUndefined();

    const counts = appliedCounts(server);
    expect([...counts.keys()].sort((a, b) => a - b)).toEqual(range(0, 149));
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    const all = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: true });
    expect(range(0, 149).every((row) => all.skipRow(input, lineOf(row)))).toBe(true);
    await all.close();
  });

  it('stops at once while every request waits out a long 429', async () => {
    server = await startFaultServer(() => ({ kind: 'rate-limit', retryAfter: 30, remaining: 0, reset: 30 }));
    client = clientFor(server);
    const stop = new AbortController();
    const journal = recordingJournal();
    const run = deliver(fromArray(buildPlan({ requests: 10, itemsPer: 2 })), { client, concurrency: 3, stopSignal: stop.signal, journal });
    while (server.received.length === 0) await wait(5);
    await wait(50);
    const began = Date.now();
    stop.abort();
    const summary = await run;
    expect(Date.now() - began).toBeLessThan(1_000);
    expect(summary.stopped).toBe(true);
    expect(summary.requestsSettled).toBe(0);
    expect(summary.rateLimited).toBeGreaterThanOrEqual(1);
    expect(journal.lines).toEqual([]);
    expect(journal.flushes).toBe(1);
  });

  it('on abort, cuts off requests on the wire and counts them as unknown', async () => {
    server = await startFaultServer((r) => (r.index < 2 ? undefined : { kind: 'hang' }));
    client = clientFor(server);
    const abort = new AbortController();
    const journal = recordingJournal();
    const run = deliver(fromArray(buildPlan({ requests: 10, itemsPer: 2 })), {
      client,
      concurrency: 2,
      abortSignal: abort.signal,
      journal,
    });
    while (server.received.length < 4) await wait(5);
    abort.abort();
    const summary = await run;
    expect(summary.aborted).toBe(true);
    expect(summary.requestsSettled).toBe(2);
    expect(summary.unknownOutcomes).toBe(2);
    expect(summary.rowsInUnknownRequests).toBe(4);
    // sent once: in doubt, not doubled (a resume that sends them again counts them then)
    expect(summary.rowsPossiblyDuplicated).toBe(0);
    expect(journal.lines).toEqual(range(lineOf(0), lineOf(3)));
    expect(server.received).toHaveLength(4);
  });
});

describe('deliver: the journal waits for the delta state', () => {
  it('journals an accepted request only once the state has what it set: one the state never wrote stays in doubt', async () => {
    server = await startFaultServer(() => ({ kind: 'ok' }));
    client = clientFor(server);
    const journal = recordingJournal();
    const learnedBy = new Map<number, () => void>();
    let order = 0;
    const summary = await deliver(fromArray(buildPlan({ requests: 6, itemsPer: 2 })), {
      client,
      concurrency: 2,
      journal,
      // the state writes the accepted requests' records later, and the fourth never (the run killed first)
      onAccepted: () => {
        const n = order++;
        return new Promise<void>((resolve) => learnedBy.set(n, resolve));
      },
    });
    expect(summary.requestsSettled).toBe(6);
    // accepted, and nothing journaled yet: the state holds none of it
    expect(journal.lines).toEqual([]);
    for (const n of [0, 1, 2, 4, 5]) learnedBy.get(n)!();
    await wait(10);
    expect(journal.lines.length).toBe(5 * 2);
    // the refused promise of a failed state journals nothing either
    const failing = recordingJournal();
    const failed = await deliver(fromArray(buildPlan({ requests: 2, itemsPer: 2 })), {
      client,
      concurrency: 1,
      journal: failing,
      onAccepted: () => Promise.reject(new Error('the state file is full')),
    });
    await wait(10);
    expect(failed.requestsSettled).toBe(2);
    expect(failing.lines).toEqual([]);
  });

  it('journals at once when no state learns the request', async () => {
    server = await startFaultServer(() => ({ kind: 'ok' }));
    client = clientFor(server);
    const journal = recordingJournal();
    await deliver(fromArray(buildPlan({ requests: 3, itemsPer: 2 })), { client, concurrency: 2, journal, onAccepted: () => undefined });
    expect(journal.lines.length).toBe(3 * 2);
  });
});
