// What the transport needs of a request. A PlannedRequest made in this thread is one as it is; a
// request planned in the worker thread and handed over as bytes (upload/worker/wire.ts) is another,
// whose body stays JSON text and whose origins are built only when an item is rejected.
import type { ItemOrigin } from '../model/request.js';
import { ARRAY_NAMES, type ArrayName, type TrackRequest } from '../model/types.js';

/**
 * Where a request's items came from, as columns: item i (attributes, then events, then purchases)
 * is line lines[i] of files[fileOf[i]]. What settling a request needs, at no object per item.
 */
export interface ItemLines {
  /** How many items each array holds, in the order attributes, events, purchases. */
  readonly counts: readonly number[];
  readonly files: readonly string[];
  readonly fileOf: Int32Array;
  readonly lines: Float64Array;
}

export interface RequestToSend {
  /** 0-based sequence number in the run, in the order requests were planned. */
  readonly seq: number;
  /** The body, or its JSON already as UTF-8. */
  readonly body: TrackRequest | Uint8Array;
  /** The origin of each item, at the same array and index as the item in the body. */
  readonly origins: Readonly<Record<ArrayName, readonly ItemOrigin[]>>;
  /** The users the request touches (see PlannedRequest.userKeys). */
  readonly userKeys: ArrayLike<number>;
  /** The items' files and lines, when the origins are built only on demand. */
  readonly lines?: ItemLines;
  /** The data points each item costs, in the order attributes, events, purchases. */
  readonly points?: ArrayLike<number>;
  /** What the delta state learns when the server accepts the items. */
  readonly learn?: Uint8Array;
}

/** A request's items, as settling them needs: by their origins, or by their lines alone. */
export type SettledRequest = Pick<RequestToSend, 'origins' | 'lines'>;

export type KindCounts = Record<ArrayName, number>;

/** The body as it goes on the wire. */
export function requestJson(request: Pick<RequestToSend, 'body'>): string | Uint8Array {
  return request.body instanceof Uint8Array ? request.body : JSON.stringify(request.body);
}

/** Bytes of the body held as JSON already (a body still an object is not counted). */
export function jsonBytes(request: Pick<RequestToSend, 'body'>): number {
  return request.body instanceof Uint8Array ? request.body.byteLength : 0;
}

export function itemCounts(request: SettledRequest): KindCounts {
  const counts = request.lines?.counts;
  if (counts !== undefined) return { attributes: counts[0], events: counts[1], purchases: counts[2] };
  // the origins run parallel to the items, and unlike the body they are never left as JSON text
  return {
    attributes: request.origins.attributes.length,
    events: request.origins.events.length,
    purchases: request.origins.purchases.length,
  };
}

/** Calls fn for every item's (file, line) of a request: by its lines when it has them (no origins built). */
export function forEachRow(request: SettledRequest, fn: (file: string, line: number) => void): void {
  const lines = request.lines;
  if (lines !== undefined) {
    for (let i = 0; i < lines.lines.length; i += 1) fn(lines.files[lines.fileOf[i]], lines.lines[i]);
    return;
  }
  // not destructured: origins may be built on demand, and are not needed when there are lines
  const origins = request.origins;
  for (const kind of ARRAY_NAMES) for (const o of origins[kind]) fn(o.file, o.line);
}
