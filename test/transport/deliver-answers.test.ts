// What deliver() makes of answers that are not the endpoint's: a 2xx without its success body (a
// web front end's page, no JSON, a body cut short) and a 201 whose body is still coming at the
// --request-timeout. Neither says what the service did: the outcome is unknown.
import { afterEach, describe, expect, it } from 'vitest';
import { DeliveryError } from '../../src/errors.js';
import { deliver } from '../../src/transport/deliver.js';
import { createTrackClient, type TrackClient } from '../../src/transport/http-client.js';
import type { RequestToSend } from '../../src/transport/request.js';
import { startFaultServer, type FaultAction, type FaultServer } from '../helpers/fault-server.js';
import { buildPlan, fromArray, lineOf } from './plan.js';
import { FAST_BACKOFF, KEY, collectRejects, range, recordingJournal, rowsOfBody } from './deliver-setup.js';

let server: FaultServer | undefined;
let client: TrackClient | undefined;

afterEach(async () => {
  await client?.destroy();
  await server?.close();
  client = undefined;
  server = undefined;
});

async function setUp(script: (rows: number[], attempt: number) => FaultAction | undefined, timeoutMs?: number): Promise<FaultServer> {
  const attempts = new Map<number, number>();
  server = await startFaultServer((r) => {
    const rows = rowsOfBody(r.body);
    const attempt = (attempts.get(rows[0]) ?? 0) + 1;
    attempts.set(rows[0], attempt);
    return script(rows, attempt);
  });
  client = createTrackClient({ url: server.url, apiKey: KEY, connections: 4, timeoutMs });
  return server;
}

const NGINX = '<html><body>Welcome to nginx!</body></html>';
const page: FaultAction = { kind: 'raw', status: 200, body: NGINX, contentType: 'text/html' };

/** The hooks a delta upload gives deliver(), recording which requests each was told of. */
function stateHooks() {
  const told = { marked: [] as number[], accepted: [] as number[], inDoubt: [] as number[], notApplied: [] as number[] };
  return {
    told,
    hooks: {
      beforeFirstPost: async (r: RequestToSend) => void told.marked.push(r.seq),
      onAccepted: (r: RequestToSend) => void told.accepted.push(r.seq),
      onInDoubt: (r: RequestToSend) => void told.inDoubt.push(r.seq),
      notApplied: (r: RequestToSend) => void told.notApplied.push(r.seq),
    },
  };
}

describe("deliver: a 2xx that is not the endpoint's answer", () => {
  it('stops the run when every answer is a web page: nothing accepted, nothing learned, its rows held in doubt', async () => {
    const s = await setUp(() => page);
    const plan = buildPlan({ requests: 30, itemsPer: 5 });
    const journal = recordingJournal();
    const { rejects, onReject } = collectRejects();
    const { told, hooks } = stateHooks();
    const summary = await deliver(fromArray(plan), { client: client!, concurrency: 2, backoff: FAST_BACKOFF, journal, onReject, ...hooks });

    expect(summary.fatal).toBeInstanceOf(DeliveryError);
    expect(summary.fatal?.message).toBe(
      `${s.url}/users/track answered HTTP 200 (text/html): "${NGINX}"; this does not look like the endpoint: check --url`,
    );
    // stopped at the first answers, not after retries of every request
    expect(s.received.length).toBeLessThanOrEqual(2);
    expect(summary.attempts).toBe(s.received.length);
    expect(summary.items.attributes).toEqual({ sent: 0, accepted: 0, rejected: 0 });
    expect(summary.items.events).toEqual({ sent: 0, accepted: 0, rejected: 0 });
    expect(summary.requestsSent).toBe(0);
    expect(summary.unknownOutcomes).toBe(s.received.length);
    expect(rejects).toEqual([]);
    expect(journal.lines).toEqual([]); // nothing settled: a resume sends them again
    expect(told.accepted).toEqual([]);
    expect(told.inDoubt.sort()).toEqual(told.marked.sort()); // may have reached the service
    expect(told.notApplied).toEqual([]);
  });

  it('takes one after the endpoint answered as an unknown outcome: sent again, counted as possibly duplicated', async () => {
    // rows 5..9 (the second request) meet the page once, rows 10..14 a cut-off 201 once
    const s = await setUp((rows, attempt) => {
      if (attempt > 1) return undefined;
      if (rows[0] === 5) return page;
      if (rows[0] === 10) return { kind: 'raw', status: 201, body: '{"a":', contentType: 'application/json' };
      return undefined;
    });
    const plan = buildPlan({ requests: 3, itemsPer: 5 });
    const notices: string[] = [];
    const { told, hooks } = stateHooks();
    const summary = await deliver(fromArray(plan), {
      client: client!,
      concurrency: 1,
      backoff: FAST_BACKOFF,
      onNotice: (n) => void (n.type === 'unknown-outcome' && notices.push(n.reason)),
      ...hooks,
    });

    expect(summary.fatal).toBeUndefined();
    expect(notices).toEqual([
      `an answer that is not the endpoint's: HTTP 200 (text/html): "${NGINX}"`,
      `an answer that is not the endpoint's: HTTP 201 (application/json): "{\\"a\\":"`,
    ]);
    expect(summary).toMatchObject({ attempts: 5, retries: 2, unknownOutcomes: 2, rowsInUnknownRequests: 10, rowsPossiblyDuplicated: 10, requestsSettled: 3 });
    expect(summary.items.attributes.accepted + summary.items.events.accepted).toBe(15);
    expect(told.accepted).toEqual([0, 1, 2]);
    expect(s.received).toHaveLength(5);
  });

  it('with onUnknown "reject", writes the rows of such an answer to the rejects, saying what came', async () => {
    await setUp((rows) => (rows[0] === 5 ? { kind: 'raw', status: 200, body: 'not json!' } : undefined));
    const plan = buildPlan({ requests: 2, itemsPer: 5, file: 'in.csv' });
    const { rejects, onReject } = collectRejects();
    const { told, hooks } = stateHooks();
    const summary = await deliver(fromArray(plan), { client: client!, concurrency: 1, onUnknown: 'reject', onReject, ...hooks });

    expect(summary.fatal).toBeUndefined();
    expect(rejects.map((r) => r.line).sort((a, b) => a - b)).toEqual(range(lineOf(5), lineOf(9)));
    expect(rejects[0].errors).toEqual([`outcome unknown (an answer that is not the endpoint's: HTTP 200 (no content type): "not json!"); not sent again`]);
    expect(summary.items.attributes.accepted + summary.items.events.accepted).toBe(5);
    expect(told).toMatchObject({ accepted: [0], inDoubt: [1] });
  });
});

describe('deliver: a 201 whose body trickles past the --request-timeout', () => {
  it('is an unknown outcome, not an accepted request', async () => {
    const s = await setUp((rows, attempt) => (rows[0] === 0 && attempt === 1 ? { kind: 'trickle' } : undefined), 300);
    const plan = buildPlan({ requests: 2, itemsPer: 5, file: 'in.csv' });
    const { rejects, onReject } = collectRejects();
    const { told, hooks } = stateHooks();
    const summary = await deliver(fromArray(plan), { client: client!, concurrency: 1, onUnknown: 'reject', onReject, ...hooks });

    expect(s.received).toHaveLength(2);
    expect(rejects.map((r) => r.line).sort((a, b) => a - b)).toEqual(range(lineOf(0), lineOf(4)));
    expect(rejects[0].errors).toEqual(['outcome unknown (no answer within 0.3 s, the --request-timeout); not sent again']);
    expect(summary).toMatchObject({ unknownOutcomes: 1, rowsInUnknownRequests: 5 });
    expect(summary.items.attributes.accepted + summary.items.events.accepted).toBe(5);
    expect(told).toMatchObject({ accepted: [1], inDoubt: [0] });
  });
});
