import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { DeliveryError, InputError } from '../../src/errors.js';
import type { PlannedRequest } from '../../src/model/request.js';
import { deliver } from '../../src/transport/deliver.js';
import { createTrackClient, type TrackClient } from '../../src/transport/http-client.js';
import { startFaultServer, type FaultAction, type FaultServer } from '../helpers/fault-server.js';
import { buildPlan, fromArray, lineOf } from './plan.js';
import {
  FAST_BACKOFF,
  KEY,
  appliedCounts,
  clientFor,
  collectRejects,
  range,
  recordingJournal,
  rowsOfBody,
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

describe('deliver: through failures', () => {
  it('rides through 5xx and dropped connections; nothing lost, and doubles only where the outcome was unknown', async () => {
    // request n's answer on its kth attempt
    const fault = (n: number, attempt: number): FaultAction | undefined => {
      if (n % 7 === 3 && attempt === 1) return { kind: 'status', status: 503 };
      if (n % 5 === 1 && attempt === 1) return { kind: 'destroy' }; // applied, then the line went dead
      if (n % 9 === 2 && attempt <= 2) return { kind: 'status', status: 500 };
      return undefined;
    };
    const attempts = new Map<number, number>();
    await setUp((r) => {
      const n = rowsOfBody(r.body)[0] / 5;
      const attempt = (attempts.get(n) ?? 0) + 1;
      attempts.set(n, attempt);
      return fault(n, attempt);
    });
    const plan = buildPlan({ requests: 40, itemsPer: 5 });
    const journal = recordingJournal();
    const notices: string[] = [];
    const summary = await deliver(fromArray(plan), {
      client,
      concurrency: 5,
      backoff: FAST_BACKOFF,
      retries: 3,
      journal,
      onNotice: (n) => notices.push(n.type),
    });

    // what should have happened, request by request
    let retries = 0;
    const dropped: number[] = [];
    for (const n of range(0, 39)) {
      for (let attempt = 1; fault(n, attempt) !== undefined; attempt += 1) {
        retries += 1;
        if (fault(n, attempt)?.kind === 'destroy') dropped.push(n);
      }
    }
    expect(dropped.length).toBeGreaterThan(3);
    const doubledRows = dropped.flatMap((n) => range(n * 5, n * 5 + 4));

    const counts = appliedCounts(server);
    expect([...counts.keys()].sort((a, b) => a - b)).toEqual(range(0, 199)); // nothing lost
    const twice = [...counts].filter(([, n]) => n > 1).map(([row]) => row).sort((a, b) => a - b);
    expect(twice).toEqual(doubledRows); // doubled only where it could not be known
    expect([...counts.values()].every((n) => n <= 2)).toBe(true);

    expect(summary.unknownOutcomes).toBe(dropped.length);
    expect(summary.rowsInUnknownRequests).toBe(doubledRows.length);
    expect(summary.rowsPossiblyDuplicated).toBe(doubledRows.length);
    expect(summary.retries).toBe(retries);
    expect(summary.attempts).toBe(40 + retries);
    expect(summary.requestsSettled).toBe(40);
    expect(summary.fatal).toBeUndefined();
    expect(journal.lines).toEqual(range(lineOf(0), lineOf(199)));
    expect(notices).toContain('unknown-outcome');
    expect(notices).toContain('retry');
  });

  it('with onUnknown "reject", sends an unknown request no more and rejects its rows instead', async () => {
    await setUp((r) => (rowsOfBody(r.body)[0] === 10 ? { kind: 'destroy' } : undefined));
    const plan = buildPlan({ requests: 6, itemsPer: 5, file: 'in.csv' });
    const journal = recordingJournal();
    const { rejects, onReject } = collectRejects();
    const summary = await deliver(fromArray(plan), { client, concurrency: 2, onUnknown: 'reject', journal, onReject });

    expect(server.received.filter((r) => rowsOfBody(r.body)[0] === 10)).toHaveLength(1);
    expect(rejects.map((r) => [r.file, r.line, r.kind])).toEqual([
      ['in.csv', lineOf(10), 'attributes'],
      ['in.csv', lineOf(12), 'attributes'],
      ['in.csv', lineOf(14), 'attributes'],
      ['in.csv', lineOf(11), 'events'],
      ['in.csv', lineOf(13), 'events'],
    ]);
    expect(rejects[0].errors[0]).toMatch(/outcome unknown .*not sent again/);
    expect(summary).toMatchObject({
      unknownOutcomes: 1,
      rowsInUnknownRequests: 5,
      rowsPossiblyDuplicated: 0,
      retries: 0,
      requestsSettled: 6,
      items: { attributes: { rejected: 3 }, events: { rejected: 2 } },
    });
    expect(journal.lines).toEqual(range(lineOf(0), lineOf(29))); // rejected rows are settled too
  });

  it('rejects the items of a refused request with the server message, and carries on', async () => {
    await setUp((r) =>
      rowsOfBody(r.body).includes(7)
        ? { kind: 'status', status: 400, message: 'refused by the workspace policy' }
        : undefined,
    );
    const plan = buildPlan({ requests: 4, itemsPer: 5, file: 'in.csv' });
    const { rejects, onReject } = collectRejects();
    const summary = await deliver(fromArray(plan), { client, concurrency: 2, onReject, backoff: FAST_BACKOFF });
    expect(rejects.map((r) => r.line).sort((a, b) => a - b)).toEqual(range(lineOf(5), lineOf(9)));
    expect(new Set(rejects.flatMap((r) => r.errors))).toEqual(new Set(['HTTP 400: refused by the workspace policy']));
    expect(server.received).toHaveLength(4); // not retried
    // rows 5..9: attributes on rows 6 and 8, events on rows 5, 7 and 9
    expect(summary.items.attributes).toEqual({ sent: 10, accepted: 8, rejected: 2 });
    expect(summary.items.events).toEqual({ sent: 10, accepted: 7, rejected: 3 });
    expect(summary.fatal).toBeUndefined();
  });

  it('joins the minor errors of a 201 back to file and line', async () => {
    await setUp((r) =>
      rowsOfBody(r.body)[0] === 5
        ? {
            kind: 'minor',
            errors: [
              { type: "events[1]: 'time' is not an ISO 8601 time", input_array: 'events', index: 1 },
              { type: "attributes[2]: 'dob' is not a date", input_array: 'attributes', index: 2 },
            ],
          }
        : undefined,
    );
    const plan = buildPlan({ requests: 3, itemsPer: 5, file: 'in.csv' });
    const journal = recordingJournal();
    const { rejects, onReject } = collectRejects();
    const summary = await deliver(fromArray(plan), { client, onReject, journal });
    // request 1 holds rows 5..9: attributes rows 6, 8 and events rows 5, 7, 9
    expect(rejects).toEqual([
      {
        file: 'in.csv',
        line: lineOf(7),
        kind: 'events',
        row: { external_id: 'u7', row: '7' },
        errors: ["events[1]: 'time' is not an ISO 8601 time"],
      },
    ]);
    expect(summary.warnings).toEqual([expect.stringContaining('no item')]);
    expect(summary.items.events).toEqual({ sent: 7, accepted: 6, rejected: 1 });
    expect(journal.lines).toEqual(range(lineOf(0), lineOf(14)));
  });
});

describe('deliver: a 400 that refused every item one by one', () => {
  it('writes each item to the rejects file with its own reason; the rows count as rejected, the request as settled', async () => {
    // request 1 holds rows 5..9: attributes rows 6, 8 (indexes 0, 1) and events rows 5, 7, 9 (indexes 0, 1, 2)
    await setUp((r) =>
      rowsOfBody(r.body)[0] === 5
        ? {
            kind: 'refuse-all',
            errors: [
              { type: 'events time: must be an ISO 8601 date-time', input_array: 'events', index: 0 },
              { type: 'dob: must be a real date', input_array: 'attributes', index: 0 },
              { type: 'stays[0].name: nested strings are at most 255 characters', input_array: 'attributes', index: 1 },
              { type: 'name: must be a non-empty string', input_array: 'events', index: 1 },
              { type: 'properties.time: time is a reserved name', input_array: 'events', index: 2 },
            ],
          }
        : undefined,
    );
    const plan = buildPlan({ requests: 3, itemsPer: 5, file: 'in.csv' });
    const journal = recordingJournal();
    const { rejects, onReject } = collectRejects();
    const summary = await deliver(fromArray(plan), { client, onReject, journal, backoff: FAST_BACKOFF });
    const byLine = Object.fromEntries(rejects.map((r) => [r.line, r.errors]));
    expect(byLine).toEqual({
      [lineOf(5)]: ['events time: must be an ISO 8601 date-time'],
      [lineOf(6)]: ['dob: must be a real date'],
      [lineOf(7)]: ['name: must be a non-empty string'],
      [lineOf(8)]: ['stays[0].name: nested strings are at most 255 characters'],
      [lineOf(9)]: ['properties.time: time is a reserved name'],
    });
    expect(server.received).toHaveLength(3); // not retried
    expect(summary.fatal).toBeUndefined();
    expect(summary.requestsSettled).toBe(3);
    expect(summary.requestsAbandoned).toBe(0);
    expect(summary.items.attributes).toEqual({ sent: 8, accepted: 6, rejected: 2 });
    expect(summary.items.events).toEqual({ sent: 7, accepted: 4, rejected: 3 });
    expect(journal.lines).toEqual(range(lineOf(0), lineOf(14)));
  });

  it('gives an item no entry names the server message, as nothing of the request was applied', async () => {
    await setUp((r) =>
      rowsOfBody(r.body)[0] === 0 ? { kind: 'refuse-all', errors: [{ type: 'dob: must be a real date', input_array: 'attributes', index: 0 }] } : undefined,
    );
    const plan = buildPlan({ requests: 1, itemsPer: 2, file: 'in.csv' });
    const { rejects, onReject } = collectRejects();
    const summary = await deliver(fromArray(plan), { client, onReject });
    expect(rejects.map((r) => [r.line, r.errors])).toEqual([
      [lineOf(0), ['dob: must be a real date']],
      [lineOf(1), [expect.stringMatching(/^HTTP 400: Valid data must be provided/)]],
    ]);
    expect(summary.items.attributes.rejected + summary.items.events.rejected).toBe(2);
  });
});

describe('deliver: a request over the batch limit of the server', () => {
  it('stops the run, naming the flags that set the limits, and rejects no row', async () => {
    await setUp((r) =>
      r.index === 0
        ? { kind: 'status', status: 400, message: 'request has 75 items; at most 50 are allowed across attributes, events and purchases' }
        : undefined,
    );
    const plan = buildPlan({ requests: 10, itemsPer: 5 });
    const { rejects, onReject } = collectRejects();
    const summary = await deliver(fromArray(plan), { client, concurrency: 1, onReject });
    expect(summary.fatal).toBeInstanceOf(DeliveryError);
    expect((summary.fatal as DeliveryError).status).toBe(400);
    for (const flag of ['--limits', '--max-total', '--max-per-array']) expect(summary.fatal?.message).toContain(flag);
    expect(rejects).toEqual([]);
    expect(summary.requestsSettled).toBe(0);
    expect(server.received.length).toBeLessThanOrEqual(2);
  });
});

describe('deliver: stopping on fatal errors', () => {
  it('stops on 401 without sending more, leaving unsettled rows out of the journal', async () => {
    await setUp((r) => (r.index >= 3 ? { kind: 'status', status: 401, message: 'unknown API key' } : undefined));
    const plan = buildPlan({ requests: 30, itemsPer: 2 });
    const journal = recordingJournal();
    const summary = await deliver(fromArray(plan), { client, concurrency: 2, journal });
    expect(summary.fatal).toBeInstanceOf(DeliveryError);
    expect((summary.fatal as DeliveryError).status).toBe(401);
    expect(summary.fatal?.message).toMatch(/refused the API key.*unknown API key/);
    expect(summary.fatal?.message).not.toContain(KEY);
    expect(server.received.length).toBeLessThanOrEqual(3 + 2);
    expect(summary.requestsSettled).toBe(3);
    expect(summary.requestsSettled + summary.requestsAbandoned + (summary.notDelivered['stopped before it was sent'] ?? 0)).toBe(summary.requestsPulled);
    const appliedLines = [...appliedCounts(server).keys()].map(lineOf).sort((a, b) => a - b);
    expect(appliedLines).toHaveLength(6);
    expect(journal.lines).toEqual(appliedLines);
  });

  it('stops when the server keeps answering 429 past the cap', async () => {
    await setUp(() => ({ kind: 'rate-limit', retryAfter: 0, reset: 0 }));
    const notices: string[] = [];
    const summary = await deliver(fromArray(buildPlan({ requests: 2, itemsPer: 2 })), {
      client,
      concurrency: 1,
      maxRateLimitWaits: 3,
      onNotice: (n) => notices.push(n.type),
    });
    expect(summary.fatal).toBeInstanceOf(DeliveryError);
    expect(summary.fatal?.message).toMatch(/429 .* after 3 waits/);
    expect(summary).toMatchObject({ rateLimited: 4, retries: 0, attempts: 4, requestsSettled: 0 });
    expect(notices).toEqual(['rate-limited', 'rate-limited', 'rate-limited']);
  });

  it('stops rather than wait longer than allowed for a 429', async () => {
    await setUp(() => ({ kind: 'rate-limit', retryAfter: 7_200 }));
    const summary = await deliver(fromArray(buildPlan({ requests: 3, itemsPer: 2 })), { client, concurrency: 1 });
    expect(summary.fatal?.message).toMatch(/asks to wait 120 minutes/);
    expect(server.received).toHaveLength(1);
  });

  it('gives up after the retries and says why', async () => {
    await setUp(() => ({ kind: 'status', status: 503, message: 'maintenance' }));
    const summary = await deliver(fromArray(buildPlan({ requests: 5, itemsPer: 2 })), {
      client,
      concurrency: 1,
      retries: 2,
      backoff: FAST_BACKOFF,
    });
    expect(server.received).toHaveLength(3);
    expect(summary.fatal).toBeInstanceOf(DeliveryError);
    expect(summary.fatal?.message).toMatch(/gave up .* after 2 retries: HTTP 503: maintenance/);
    expect(summary).toMatchObject({ attempts: 3, retries: 2, requestsSettled: 0 });
  });

  it('gives up on a server it cannot reach, counting nothing as unknown', async () => {
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const { port } = probe.address() as { port: number };
    await new Promise((r) => probe.close(r));
    server = await startFaultServer(); // for afterEach
    client = createTrackClient({ url: `http://127.0.0.1:${port}`, apiKey: KEY });
    const summary = await deliver(fromArray(buildPlan({ requests: 3, itemsPer: 2 })), { client, retries: 1, backoff: FAST_BACKOFF });
    expect(summary.fatal?.message).toMatch(/could not send the request: .*ECONNREFUSED/);
    expect(summary.unknownOutcomes).toBe(0);
    expect(summary.rowsPossiblyDuplicated).toBe(0);
    // nothing reached a server: no request counts as sent, each is not delivered, with the reason
    expect(summary.attempts).toBeGreaterThan(0);
    expect(summary.requestsSent).toBe(0);
    expect(summary.items.attributes.sent).toBe(0);
    expect(summary.requestsNotDelivered).toBe(summary.requestsPulled);
    expect(Object.keys(summary.notDelivered).join('\n')).toMatch(/ECONNREFUSED/);
    expect(summary.requestsSettled).toBe(0);
  });

  it('stops when the plan fails, after letting requests in flight finish', async () => {
    await setUp(() => ({ kind: 'ok', delayMs: 20 }));
    const plan = buildPlan({ requests: 10, itemsPer: 2 });
    const journal = recordingJournal();
    async function* failing(): AsyncGenerator<PlannedRequest> {
      yield plan[0];
      yield plan[1];
      throw new InputError('cannot read it: EIO', 'users.csv');
    }
    const summary = await deliver(failing(), { client, journal });
    expect(summary.fatal).toBeInstanceOf(InputError);
    expect(summary.requestsSettled).toBe(2);
    expect(journal.lines).toEqual(range(lineOf(0), lineOf(3)));
  });

  it('stops when the rejects cannot be written, the request whose rejects were offered settled all the same', async () => {
    await setUp(() => ({ kind: 'status', status: 400 }));
    const journal = recordingJournal();
    const offered: number[] = [];
    const summary = await deliver(fromArray(buildPlan({ requests: 4, itemsPer: 2 })), {
      client,
      concurrency: 1,
      journal,
      onReject: (record) => {
        offered.push(record.line);
        throw new Error('ENOSPC');
      },
    });
    expect(summary.fatal?.message).toBe('ENOSPC');
    // every reject of the first request was offered (the journal's beforeSettling carries them), and its rows settled
    expect(offered).toEqual([lineOf(0), lineOf(0) + 1]);
    expect(summary.requestsSettled).toBe(1);
    expect(journal.lines).toEqual(range(lineOf(0), lineOf(1)));
    expect(summary.requestsAbandoned + (summary.notDelivered['stopped before it was sent'] ?? 0)).toBe(summary.requestsPulled - 1);
    expect(server.received).toHaveLength(1);
  });
});
