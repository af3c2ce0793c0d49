// Turns the server's verdict on items back into rows of the input: minor errors of a 201 are
// joined through input_array and index to the item's origin (decisions.md "Wire format").
import { ARRAY_NAMES, type ArrayName } from '../model/types.js';
import { rejectRecord, type ItemOrigin, type RejectRecord } from '../model/request.js';
import { forEachRow, itemCounts, type KindCounts, type RequestToSend } from './request.js';

/** Distinct (file, line) rows behind a request's items. */
export function distinctRows(request: RequestToSend): number {
  return addRows(request, new Set()).size;
}

/** Adds the (file, line) rows behind a request's items to `rows` (a row split over requests is one); returns it. */
export function addRows(request: RequestToSend, rows: Set<string>): Set<string> {
  // by the request's lines when it has them: no origin is built
  forEachRow(request, (file, line) => rows.add(`${file}\u0000${line}`));
  return rows;
}

/** An item's reject record: its origin, with its place in its line when the line holds several. */
function rejectOf(origin: ItemOrigin, kind: ArrayName, errors: string[]): RejectRecord {
  return rejectRecord(origin.file, origin.line, kind, origin.row, errors, origin.item, origin.fileLine);
}

/**
 * One reject per item of a refused request. With the minor error entries of a 400 that refused every
 * item (decisions.md "Wire format"), each item gets its own reasons, as the errors of a 201; an item
 * no entry names (nothing of the request was applied) gets the server's message.
 */
export function wholeRequestRejects(request: RequestToSend, message: string, errors?: unknown[]): RejectRecord[] {
  const named = errors === undefined ? new Map<string, string[]>() : reasonsByItem(request, errors).reasons;
  const rejects: RejectRecord[] = [];
  for (const kind of ARRAY_NAMES) {
    (request.origins[kind] ?? []).forEach((o, index) => {
      rejects.push(rejectOf(o, kind, named.get(`${kind}:${index}`) ?? [message]));
    });
  }
  return rejects;
}

export interface MinorErrorJoin {
  /** One record per rejected item, holding every message the server gave for it. */
  rejects: RejectRecord[];
  rejectedPerKind: KindCounts;
  /** The rejected items by their place in the body, counting attributes, then events, then purchases. */
  rejectedItems: Set<number>;
  /** Entries that name no item of the request, described for a warning. */
  unmatched: string[];
}

function isArrayName(value: unknown): value is ArrayName {
  return value === 'attributes' || value === 'events' || value === 'purchases';
}

/** The reasons the entries give each item they name ("array:index", in the order first named), and those naming none. */
function reasonsByItem(request: RequestToSend, errors: unknown[]): { reasons: Map<string, string[]>; unmatched: string[] } {
  const reasons = new Map<string, string[]>();
  const unmatched: string[] = [];
  for (const entry of errors) {
    const e = (typeof entry === 'object' && entry !== null ? entry : {}) as Record<string, unknown>;
    const message = typeof e.type === 'string' ? e.type : JSON.stringify(entry);
    const origin = isArrayName(e.input_array) && typeof e.index === 'number' ? request.origins[e.input_array]?.[e.index] : undefined;
    if (origin === undefined) {
      unmatched.push(`request ${request.seq}: the server reported an error for no item of it: ${JSON.stringify(entry)}`);
      continue;
    }
    const key = `${e.input_array as ArrayName}:${e.index as number}`;
    const known = reasons.get(key);
    if (known === undefined) reasons.set(key, [message]);
    else known.push(message);
  }
  return { reasons, unmatched };
}

export function joinMinorErrors(request: RequestToSend, errors: unknown): MinorErrorJoin {
  const rejectedPerKind: KindCounts = { attributes: 0, events: 0, purchases: 0 };
  const rejectedItems = new Set<number>();
  if (!Array.isArray(errors) || errors.length === 0) return { rejects: [], rejectedPerKind, rejectedItems, unmatched: [] };
  const { reasons, unmatched } = reasonsByItem(request, errors);
  const counts = itemCounts(request);
  const first: KindCounts = { attributes: 0, events: counts.attributes, purchases: counts.attributes + counts.events };
  const rejects: RejectRecord[] = [];
  for (const [key, messages] of reasons) {
    const at = key.indexOf(':');
    const kind = key.slice(0, at) as ArrayName;
    const index = Number(key.slice(at + 1));
    rejects.push(rejectOf(request.origins[kind][index], kind, messages));
    rejectedPerKind[kind] += 1;
    rejectedItems.add(first[kind] + index);
  }
  return { rejects, rejectedPerKind, rejectedItems, unmatched };
}
