// A request refused whole for a blocklisted external_id is sent again in halves until the
// blocklisted items are alone, against the emulator (its --blocklist answers as the service does):
// only those items are rejected, each naming its id, and the request settles once.
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/index.js';
import { deliver } from '../../src/transport/deliver.js';
import { createTrackClient, type TrackClient } from '../../src/transport/http-client.js';
import type { RequestToSend } from '../../src/transport/request.js';
import { startFaultServer, type FaultServer, type Script } from '../helpers/fault-server.js';
import { buildPlan, fromArray, lineOf } from './plan.js';
import { FAST_BACKOFF, KEY, collectRejects, range, recordingJournal, rowsOfBody } from './deliver-setup.js';

let emulator: Emulator | undefined;
let faults: FaultServer | undefined;
let client: TrackClient | undefined;

afterEach(async () => {
  await client?.destroy();
  await emulator?.close();
  await faults?.close();
  client = emulator = faults = undefined;
});

const BLOCKED = 'HTTP 400: provided external_id is blocklisted and not allowed';

async function emulatorBlocking(...ids: string[]): Promise<Emulator> {
  emulator = await startEmulator({ apiKeys: [KEY], blocklist: ids });
  client = createTrackClient({ url: emulator.url, apiKey: KEY });
  return emulator;
}

/** Which requests onAccepted was told of, with the places in their bodies it was told were refused. */
function acceptedHook() {
  const told: Array<[number, number[]]> = [];
  return { told, onAccepted: (r: RequestToSend, rejected: ReadonlySet<number>) => void told.push([r.seq, [...rejected].sort((a, b) => a - b)]) };
}

/**
 * A stand-in (and a client of it) that refuses any request holding row 3 as blocklisted, and breaks
 * the connection of the part of the 10 attributes (rows 0, 2, ... 18: items are halved in body
 * order, attributes first) the first time it comes (`applied`: after applying it); `otherwise`
 * answers the rest (undefined: a success).
 */
async function breakingTheAttributesOnce(applied: boolean, otherwise: Script = () => undefined): Promise<FaultServer> {
  let broke = false;
  const server = (faults = await startFaultServer((r) => {
    const rows = rowsOfBody(r.body);
    if (rows.includes(3)) return { kind: 'status', status: 400, message: 'provided external_id is blocklisted and not allowed' };
    if (rows[0] === 0 && rows[1] === 2 && rows.length === 10 && !broke) {
      broke = true;
      return { kind: 'destroy', applied };
    }
    return otherwise(r);
  }));
  client = createTrackClient({ url: server.url, apiKey: KEY });
  return server;
}

describe('deliver: a request refused whole for a blocklisted external_id', () => {
  it('is sent again in parts: only the blocklisted rows are rejected, each naming its id; every row settles once', async () => {
    // rows 0..119 in 3 requests of 40; u7 (an event) and u20 (attributes) in the first, u93 in the third
    const emu = await emulatorBlocking('u7', 'u20', 'u93');
    const plan = buildPlan({ requests: 3, itemsPer: 40, file: 'in.csv' });
    const journal = recordingJournal();
    const { rejects, onReject } = collectRejects();
    const { told, onAccepted } = acceptedHook();
    const summary = await deliver(fromArray(plan), { client: client!, concurrency: 2, journal, onReject, onAccepted });

    expect(summary.fatal).toBeUndefined();
    expect(rejects.map((r) => [r.line, r.kind, r.errors]).sort((a, b) => (a[0] as number) - (b[0] as number))).toEqual([
      [lineOf(7), 'events', [`${BLOCKED}, got "u7"`]],
      [lineOf(20), 'attributes', [`${BLOCKED}, got "u20"`]],
      [lineOf(93), 'events', [`${BLOCKED}, got "u93"`]],
    ]);
    // the rest reached the emulator, once each
    expect(emu.store.counts()).toMatchObject({ profiles: 117, events: 58 });
    for (const id of ['u7', 'u20', 'u93']) expect(emu.store.idByExternalId(id)).toBeUndefined();
    expect(emu.store.idByExternalId('u8')).toBeDefined();
    expect(journal.lines).toEqual(range(lineOf(0), lineOf(119)));
    // each request learned once, without the blocklisted items (u7: the 4th event of 20; u20: the 11th attribute)
    expect(told.sort((a, b) => a[0] - b[0])).toEqual([
      [0, [10, 23]],
      [1, []],
      [2, [20 + 6]],
    ]);
    expect(summary.items.attributes).toEqual({ sent: 60, accepted: 59, rejected: 1 });
    expect(summary.items.events).toEqual({ sent: 60, accepted: 58, rejected: 2 });
    expect(summary.requestsSent).toBe(3);
    expect(summary.requestsSettled).toBe(3);
    // the parts are counted (every post answered 201 or 400), and bounded: 2·ceil(log2(40)) = 12 a blocklisted item at most
    expect(summary.attempts).toBe(3 + summary.requestsInParts);
    expect(summary.answers['201'] + summary.answers['400']).toBe(summary.attempts);
    expect(summary.warnings.sort()).toEqual([
      expect.stringMatching(/^request 0: refused whole for a blocklisted external_id \("u20", "u7"\); sent again in \d+ parts, so that only its items are rejected$/),
      expect.stringMatching(/^request 2: refused whole for a blocklisted external_id \("u93"\); sent again in \d+ parts/),
    ]);
    const parts = summary.warnings.map((w) => Number(/in (\d+) parts/.exec(w)?.[1]));
    expect(parts[0] + parts[1]).toBe(summary.requestsInParts);
    expect(parts[0]).toBeLessThanOrEqual(2 * 12);
    expect(parts[1]).toBeLessThanOrEqual(12);
  });

  it('names the id of a request of one blocklisted item, which needs no parts', async () => {
    await emulatorBlocking('u1');
    const plan = buildPlan({ requests: 2, itemsPer: 1, file: 'in.csv' });
    const { rejects, onReject } = collectRejects();
    const { told, onAccepted } = acceptedHook();
    const summary = await deliver(fromArray(plan), { client: client!, concurrency: 1, onReject, onAccepted });
    expect(rejects.map((r) => [r.line, r.errors])).toEqual([[lineOf(1), [`${BLOCKED}, got "u1"`]]]);
    expect(told).toEqual([[0, []]]); // nothing learned of the refused one
    expect(summary).toMatchObject({ attempts: 2, requestsInParts: 0, requestsSettled: 2, warnings: [] });
  });

  it('stopped between its parts: the parts are still sent and answered (one request in flight), and the request settles whole', async () => {
    const stop = new AbortController();
    faults = await startFaultServer((r) => {
      if (rowsOfBody(r.body).includes(3)) return { kind: 'status', status: 400, message: 'provided external_id is blocklisted and not allowed' };
      stop.abort(); // Ctrl-C while the first part is on the wire
      return undefined;
    });
    client = createTrackClient({ url: faults.url, apiKey: KEY });
    const plan = buildPlan({ requests: 1, itemsPer: 8, file: 'in.csv' });
    const journal = recordingJournal();
    const { rejects, onReject } = collectRejects();
    const told = { inDoubt: [] as number[], notApplied: [] as number[], accepted: [] as number[] };
    const summary = await deliver(fromArray(plan), {
      client: client!,
      stopSignal: stop.signal,
      journal,
      onReject,
      beforeFirstPost: async () => {},
      onAccepted: (r) => void told.accepted.push(r.seq),
      onInDoubt: (r) => void told.inDoubt.push(r.seq),
      notApplied: (r) => void told.notApplied.push(r.seq),
    });
    // the whole request, its first half (the attributes, rows 0, 2, 4, 6), then after the stop the rest of its parts
    expect(faults.received.map((r) => rowsOfBody(r.body))).toEqual([range(0, 7), [0, 2, 4, 6], [1, 3, 5, 7], [1, 3], [1], [3], [5, 7]]);
    expect(summary).toMatchObject({ stopped: true, requestsAbandoned: 0, requestsSettled: 1 });
    expect(journal.lines).toEqual(range(2, 9));
    expect(rejects.map((r) => r.line)).toEqual([5]);
    expect(told).toEqual({ inDoubt: [], notApplied: [], accepted: [0] });
  });

  it('keeps the other verdicts of the parts: minor errors, and an unknown outcome with onUnknown "reject"', async () => {
    // the attributes' part broken off unapplied; row 5 named in minor errors
    const server = await breakingTheAttributesOnce(false, (r) => {
      const events = r.body?.events ?? [];
      const at = events.findIndex((e) => (e as { properties?: { row?: number } }).properties?.row === 5);
      return at === -1 ? undefined : { kind: 'minor', errors: [{ type: 'events[]: bad time', input_array: 'events', index: at }] };
    });
    const plan = buildPlan({ requests: 1, itemsPer: 20, file: 'in.csv' });
    const { rejects, onReject } = collectRejects();
    const inDoubt: number[] = [];
    const { told, onAccepted } = acceptedHook();
    const summary = await deliver(fromArray(plan), {
      client: client!,
      onUnknown: 'reject',
      backoff: FAST_BACKOFF,
      onReject,
      onAccepted,
      beforeFirstPost: async () => {},
      onInDoubt: (r) => void inDoubt.push(r.seq),
    });
    const byLine = new Map(rejects.map((r) => [r.line, r.errors[0]]));
    expect(rejects).toHaveLength(12);
    expect(byLine.get(lineOf(3))).toBe('HTTP 400: provided external_id is blocklisted and not allowed, got "u3"');
    expect(byLine.get(lineOf(5))).toBe('events[]: bad time');
    // the part of the attributes broke off: its rows are rejected as of unknown outcome, and the state holds the request in doubt
    for (const row of range(0, 9).map((n) => n * 2)) expect(byLine.get(lineOf(row))).toMatch(/^outcome unknown \(connection broke after the request was sent: .*\); not sent again$/);
    expect(told).toEqual([]);
    expect(inDoubt).toEqual([0]);
    expect(summary).toMatchObject({ unknownOutcomes: 1, requestsSettled: 1 });
    // the counts are the parts': the attributes got no verdict (not sent, as a request rejected so
    // is not), and only their rows were in a request of unknown outcome
    expect(summary.items.attributes).toEqual({ sent: 0, accepted: 0, rejected: 10, unknown: 10 });
    expect(summary.items.events).toEqual({ sent: 10, accepted: 8, rejected: 2 });
    expect(summary.rowsInUnknownRequests).toBe(10);
    expect(summary.rowsPossiblyDuplicated).toBe(0);
    // the events but u3 (refused) and u5 (its minor error) were applied, once each
    expect(server.appliedItems().map((a) => rowsOfBody({ events: [a.item] } as never)[0]).sort((a, b) => a - b)).toEqual([1, 7, 9, 11, 13, 15, 17, 19]);
  });

  it('counts as possibly duplicated only the rows of a part whose outcome was not known and that was sent again', async () => {
    // the attributes' part broken off after it was applied, and sent again (onUnknown "retry")
    await breakingTheAttributesOnce(true);
    const plan = buildPlan({ requests: 1, itemsPer: 20, file: 'in.csv' });
    const { rejects, onReject } = collectRejects();
    const summary = await deliver(fromArray(plan), { client: client!, backoff: FAST_BACKOFF, onReject, beforeFirstPost: async () => {} });
    expect(rejects.map((r) => r.line)).toEqual([lineOf(3)]);
    expect(summary).toMatchObject({ unknownOutcomes: 1, requestsSettled: 1, rowsInUnknownRequests: 10, rowsPossiblyDuplicated: 10 });
    expect(summary.items.attributes).toEqual({ sent: 10, accepted: 10, rejected: 0 });
    expect(summary.items.events).toEqual({ sent: 10, accepted: 9, rejected: 1 });
  });

  it('counts only that part\'s rows too when a later part ends the run (a 500 past its retries)', async () => {
    // the attributes' part broken off after it was applied and sent again; the part of the events 11..19 answered 500
    await breakingTheAttributesOnce(true, (r) => (rowsOfBody(r.body)[0] === 11 ? { kind: 'status', status: 500 } : undefined));
    const plan = buildPlan({ requests: 1, itemsPer: 20, file: 'in.csv' });
    const summary = await deliver(fromArray(plan), { client: client!, retries: 1, backoff: FAST_BACKOFF, onReject: collectRejects().onReject, beforeFirstPost: async () => {} });
    expect(summary.fatal?.message).toMatch(/HTTP 500/);
    // the request's rows stay in doubt (abandoned), but only the attributes' part had an outcome not known
    expect(summary).toMatchObject({ unknownOutcomes: 1, requestsAbandoned: 1, rowsAbandoned: 20, rowsInUnknownRequests: 10, rowsPossiblyDuplicated: 10 });
  });
});
