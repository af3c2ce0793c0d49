// Shared pieces of the delivery tests: a client on the fault server, a journal that remembers,
// and counting how often each row reached the server.
import type { ItemOrigin, PlannedRequest, RejectRecord } from '../../src/model/request.js';
import { createTrackClient, type TrackClient } from '../../src/transport/http-client.js';
import type { FaultServer } from '../helpers/fault-server.js';
import { rowOf } from './plan.js';

export const KEY = 'sk-deliver-test-5f2c9a71e0';
export const FAST_BACKOFF = { baseMs: 2, capMs: 10 };

export function clientFor(server: FaultServer, connections = 8): TrackClient {
  return createTrackClient({ url: server.url, apiKey: KEY, connections });
}

/** How many times each row was applied by the server. */
export function appliedCounts(server: FaultServer): Map<number, number> {
  const counts = new Map<number, number>();
  for (const { item } of server.appliedItems()) counts.set(rowOf(item), (counts.get(rowOf(item)) ?? 0) + 1);
  return counts;
}

/** Rows carried by a received request's body, lowest first. */
export function rowsOfBody(body: PlannedRequest['body'] | undefined): number[] {
  if (body === undefined) return [];
  return [...(body.attributes ?? []), ...(body.events ?? [])]
    .map((item) => rowOf(item as Record<string, unknown>))
    .sort((a, b) => a - b);
}

export function recordingJournal() {
  const lines: number[] = [];
  let flushes = 0;
  return {
    record(request: { origins: Record<'attributes' | 'events' | 'purchases', readonly ItemOrigin[]> }) {
      for (const list of Object.values(request.origins)) for (const o of list) lines.push(o.line);
    },
    async flush() {
      flushes += 1;
    },
    get lines() {
      return [...lines].sort((a, b) => a - b);
    },
    get flushes() {
      return flushes;
    },
  };
}

export function collectRejects() {
  const rejects: RejectRecord[] = [];
  return { rejects, onReject: (r: RejectRecord) => void rejects.push(r) };
}

export const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);

export const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs a few requests through a throw-away client first. Client and server share this process, so
 * cold code paths would otherwise delay the server's view of the first requests by tens of ms and
 * squeeze its one-second windows; a real server does not start cold for each run.
 */
export async function warmUp(server: FaultServer, connections = 8): Promise<void> {
  const warm = clientFor(server, connections);
  for (let round = 0; round < 3; round += 1) {
    await Promise.all(Array.from({ length: connections * 2 }, () => warm.post('{"attributes":[]}')));
  }
  await warm.destroy();
  server.forget();
}
