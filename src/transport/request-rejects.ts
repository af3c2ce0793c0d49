// Turns the server's verdict on items back into rows of the input: minor errors of a 201 are
// joined through input_array and index to the item's origin (decisions.md "Wire format").
import { ARRAY_NAMES, type ArrayName } from '../model/types.js';
import { rejectRecord, type ItemOrigin, type PlannedRequest, type RejectRecord } from '../model/plan.js';

export type KindCounts = Record<ArrayName, number>;

export function itemCounts(request: PlannedRequest): KindCounts {
  const counts = request.lines?.counts;
  if (counts !== undefined) return { attributes: counts[0], events: counts[1], purchases: counts[2] };
  // the origins run parallel to the items, and unlike the body they are never left as JSON text
  return {
    attributes: request.origins.attributes.length,
    events: request.origins.events.length,
    purchases: request.origins.purchases.length,
  };
}

/** Distinct (file, line) rows behind a request's items. */
export function distinctRows(request: PlannedRequest): number {
  const rows = new Set<string>();
  for (const kind of ARRAY_NAMES) for (const o of request.origins[kind] ?? []) rows.add(`${o.file}\u0000${o.line}`);
  return rows.size;
}

/** An item's reject record: its origin, with its place in its line when the line holds several. */
function rejectOf(origin: ItemOrigin, kind: ArrayName, errors: string[]): RejectRecord {
  return rejectRecord(origin.file, origin.line, kind, origin.row, errors, origin.item);
}

/** One reject per item of the request, all with the same message. */
export function wholeRequestRejects(request: PlannedRequest, message: string): RejectRecord[] {
  const rejects: RejectRecord[] = [];
  for (const kind of ARRAY_NAMES) {
    for (const o of request.origins[kind] ?? []) rejects.push(rejectOf(o, kind, [message]));
  }
  return rejects;
}

export interface MinorErrorJoin {
  /** One record per rejected item, holding every message the server gave for it. */
  rejects: RejectRecord[];
  rejectedPerKind: KindCounts;
  /** Entries that name no item of the request, described for a warning. */
  unmatched: string[];
}

function isArrayName(value: unknown): value is ArrayName {
  return value === 'attributes' || value === 'events' || value === 'purchases';
}

export function joinMinorErrors(request: PlannedRequest, errors: unknown): MinorErrorJoin {
  const rejectedPerKind: KindCounts = { attributes: 0, events: 0, purchases: 0 };
  const unmatched: string[] = [];
  if (!Array.isArray(errors) || errors.length === 0) return { rejects: [], rejectedPerKind, unmatched };
  const byItem = new Map<string, RejectRecord>();
  for (const entry of errors) {
    const e = (typeof entry === 'object' && entry !== null ? entry : {}) as Record<string, unknown>;
    const message = typeof e.type === 'string' ? e.type : JSON.stringify(entry);
    const origin = isArrayName(e.input_array) && typeof e.index === 'number' ? request.origins[e.input_array]?.[e.index] : undefined;
    if (origin === undefined || !isArrayName(e.input_array)) {
      unmatched.push(`request ${request.seq}: the server reported an error for no item of it: ${JSON.stringify(entry)}`);
      continue;
    }
    const key = `${e.input_array}:${e.index}`;
    const known = byItem.get(key);
    if (known !== undefined) {
      known.errors.push(message);
      continue;
    }
    byItem.set(key, rejectOf(origin, e.input_array, [message]));
    rejectedPerKind[e.input_array] += 1;
  }
  return { rejects: [...byItem.values()], rejectedPerKind, unmatched };
}
