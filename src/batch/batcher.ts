// Items -> requests within a limit profile and a body size. Items of every kind and every file
// share requests; a few requests stay open at once so that, for example, a file of attributes and a
// file of events fill the same requests under the legacy profile (75 of each). One user's items are
// never placed so that they could apply in another order than the file's: never in a request
// before one that holds an earlier item of theirs, nor in the same request in an array processed
// before that earlier item's (decisions.md: attributes, then events, then purchases).
import { limitViolation, type BatchLimits } from '../model/limits.js';
import type { ItemOrigin, PlannedRequest } from '../model/request.js';
import type { ArrayName, TrackRequest } from '../model/types.js';

export interface BatchEntry {
  kind: ArrayName;
  item: object;
  origin: ItemOrigin;
  /** identityHash() of the item's user (see PlannedRequest.userKeys). */
  userKey: number;
  /** Bytes of the item as JSON (UTF-8). */
  bytes: number;
  /** The data points the item costs (model/data-points.ts), carried to PlannedRequest.points. */
  points?: number;
  /** Anything the planner wants back with the item, carried to PlannedRequest.tags. */
  tag?: unknown;
}

export interface BatcherOptions {
  limits: BatchLimits;
  /** Largest request body in bytes of JSON; the emulator's default maximum is 4 MiB. */
  maxBodyBytes?: number;
  /** Requests kept open for more items before the oldest is given out (default 32). */
  window?: number;
  /**
   * Bytes the open requests may hold together before the oldest is given out (default: one full
   * body). Requests of small items fill by count long before; requests of large items (a CSV row
   * of thousands of columns) fill by bytes, and 32 of them kept open would hold hundreds of rows.
   */
  maxOpenBytes?: number;
}

export interface Batcher {
  /** Places an item; returns the requests this completed, in order. */
  add(entry: BatchEntry): readonly PlannedRequest[];
  /** Gives out every open request, in order. */
  finish(): PlannedRequest[];
}

export const DEFAULT_MAX_BODY_BYTES = 4_000_000;
const DEFAULT_WINDOW = 32;

const RANK: Readonly<Record<ArrayName, number>> = { attributes: 0, events: 1, purchases: 2 };

/** Bytes an item adds to a body besides its own: `"name":[` + `]` (and a comma) for a new array, else a comma. */
function framingBytes(count: number, arraysPresent: number, kind: ArrayName): number {
  if (count > 0) return 1;
  return kind.length + 5 + (arraysPresent > 0 ? 1 : 0);
}

/** The body bytes a request holding only this item would have; more than the maximum means it can never be sent. */
export function soloBodyBytes(entry: Pick<BatchEntry, 'kind' | 'bytes'>): number {
  return 2 + framingBytes(0, 0, entry.kind) + entry.bytes;
}

interface OpenRequest {
  id: number;
  items: Record<ArrayName, object[]>;
  origins: Record<ArrayName, ItemOrigin[]>;
  points: Record<ArrayName, number[]>;
  tags: Record<ArrayName, unknown[]>;
  /** An item came with a tag: the request gives them out. */
  tagged: boolean;
  counts: Record<ArrayName, number>;
  total: number;
  /** How many of the three arrays hold an item. */
  arrays: number;
  bytes: number;
  userKeys: number[];
}

/** A user's place: the newest open request holding them and the highest rank of their items in it, in one number. */
const where = (id: number, rank: number): number => id * 4 + rank;
const idOf = (place: number): number => Math.floor(place / 4);
const rankOf = (place: number): number => place % 4;
const NONE: readonly PlannedRequest[] = Object.freeze([]);

export function createBatcher(options: BatcherOptions): Batcher {
  const limits = options.limits;
  const maxBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const window = Math.max(1, options.window ?? DEFAULT_WINDOW);
  const maxOpenBytes = options.maxOpenBytes ?? maxBytes;
  const open: OpenRequest[] = [];
  /** The bytes of the open requests together. */
  let openBytes = 0;
  /**
   * For each user in an open request: where(newest request holding them, highest rank there). Made
   * anew rather than cleared once no request is open: V8 makes a cleared Map's table, and each
   * larger one it grows into, in the generation of the one it replaces, so a Map that lived long
   * enough to be moved to the old heap fills it with dead tables (72 MB of them in a first --delta
   * run of 1,000,000 rows: 12 full collections of the planning thread where there are now 1 to 3).
   */
  let latest = new Map<number, number>();
  let nextId = 0;
  let seq = 0;

  const fits = (request: OpenRequest, entry: BatchEntry): boolean => {
    if (request.total > 0 && request.bytes + framingBytes(request.counts[entry.kind], request.arrays, entry.kind) + entry.bytes > maxBytes) {
      return false;
    }
    // the cheap comparisons first: limitViolation builds a message for every refusal
    if (limits.maxTotal !== undefined && request.total >= limits.maxTotal) return false;
    if (limits.maxPerArray !== undefined && request.counts[entry.kind] >= limits.maxPerArray) return false;
    request.counts[entry.kind] += 1;
    const over = limitViolation(request.counts, limits);
    request.counts[entry.kind] -= 1;
    return over === undefined;
  };

  /** No item of any kind fits any more (by count; bytes are checked as items come). */
  const isFull = (request: OpenRequest): boolean =>
    (limits.maxTotal !== undefined && request.total >= limits.maxTotal) ||
    (limits.maxPerArray !== undefined &&
      request.counts.attributes >= limits.maxPerArray &&
      request.counts.events >= limits.maxPerArray &&
      request.counts.purchases >= limits.maxPerArray);

  const place = (request: OpenRequest, entry: BatchEntry, rank: number, known: number | undefined): void => {
    const count = request.counts[entry.kind];
    const added = framingBytes(count, request.arrays, entry.kind) + entry.bytes;
    request.bytes += added;
    openBytes += added;
    if (count === 0) request.arrays += 1;
    request.items[entry.kind].push(entry.item);
    request.origins[entry.kind].push(entry.origin);
    request.points[entry.kind].push(entry.points ?? 0);
    request.tags[entry.kind].push(entry.tag);
    if (entry.tag !== undefined) request.tagged = true;
    request.counts[entry.kind] = count + 1;
    request.total += 1;
    if (known === undefined || idOf(known) !== request.id) {
      request.userKeys.push(entry.userKey);
      latest.set(entry.userKey, where(request.id, rank));
    } else if (rankOf(known) < rank) {
      latest.set(entry.userKey, where(request.id, rank));
    }
  };

  const newRequest = (): OpenRequest => {
    const request: OpenRequest = {
      id: nextId++,
      items: { attributes: [], events: [], purchases: [] },
      origins: { attributes: [], events: [], purchases: [] },
      points: { attributes: [], events: [], purchases: [] },
      tags: { attributes: [], events: [], purchases: [] },
      tagged: false,
      counts: { attributes: 0, events: 0, purchases: 0 },
      total: 0,
      arrays: 0,
      bytes: 2,
      userKeys: [],
    };
    open.push(request);
    openBytes += request.bytes;
    return request;
  };

  /** More requests open, or more bytes in them, than may be. */
  const overflowing = (): boolean => open.length > window || openBytes > maxOpenBytes;

  /** Takes an open request out (the oldest, or all of them) and gives it its place in the sequence. */
  const giveOut = (request: OpenRequest): PlannedRequest => {
    openBytes -= request.bytes;
    if (open.length === 0) latest = new Map();
    else for (const key of request.userKeys) if (idOf(latest.get(key) ?? -1) === request.id) latest.delete(key);
    const body: TrackRequest = {};
    if (request.counts.attributes > 0) body.attributes = request.items.attributes as TrackRequest['attributes'];
    if (request.counts.events > 0) body.events = request.items.events as TrackRequest['events'];
    if (request.counts.purchases > 0) body.purchases = request.items.purchases as TrackRequest['purchases'];
    const { points, tags } = request;
    const planned: PlannedRequest = { seq: seq++, body, origins: request.origins, userKeys: request.userKeys, points: [...points.attributes, ...points.events, ...points.purchases] };
    if (request.tagged) planned.tags = [...tags.attributes, ...tags.events, ...tags.purchases];
    return planned;
  };

  return {
    add(entry) {
      const rank = RANK[entry.kind];
      const known = latest.get(entry.userKey);
      // the first open request this item may join without overtaking an earlier item of its user
      let start = 0;
      if (known !== undefined) start = idOf(known) - open[0].id + (rankOf(known) > rank ? 1 : 0);
      let target: OpenRequest | undefined;
      for (let i = start; i < open.length; i += 1) {
        if (fits(open[i], entry)) {
          target = open[i];
          break;
        }
      }
      place(target ?? newRequest(), entry, rank, known);
      if (!overflowing() && !isFull(open[0])) return NONE;
      const done: PlannedRequest[] = [];
      while (open.length > 0 && (overflowing() || isFull(open[0]))) done.push(giveOut(open.shift() as OpenRequest));
      return done;
    },
    finish() {
      const done: PlannedRequest[] = [];
      while (open.length > 0) done.push(giveOut(open.shift() as OpenRequest));
      return done;
    },
  };
}
