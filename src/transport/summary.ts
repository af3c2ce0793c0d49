// What a delivery did, counted as it happened; returned by deliver() and shown in progress.
import type { ArrayName } from '../model/types.js';

export interface ItemTally {
  /** Items in requests the server answered with its verdict on them (accepted, or refused for what they hold). */
  sent: number;
  /** Items the server queued (sent, minus those its minor errors named). */
  accepted: number;
  /** Items written to the rejects file: minor errors, refused requests, unknown outcomes with onUnknown 'reject'. */
  rejected: number;
  /**
   * Of those, the items of requests whose outcome stayed unknown, rejected unsent again (onUnknown
   * 'reject'): not among `sent`. Only when there are any (a tally is otherwise as it always was).
   */
  unknown?: number;
}

/** The items of a tally the server answered for and refused (`rejected` without those of no verdict). */
export const refusedOf = (tally: ItemTally): number => tally.rejected - (tally.unknown ?? 0);

/** A figure of a delivery's items, over the three arrays: `refused` the items the server answered for and refused (refusedOf). */
export function itemsSum(items: Record<ArrayName, ItemTally>, figure: 'sent' | 'accepted' | 'refused'): number {
  let sum = 0;
  for (const tally of Object.values(items)) sum += figure === 'refused' ? refusedOf(tally) : tally[figure];
  return sum;
}

export interface DeliverySummary {
  /** Requests taken from the plan. */
  requestsPulled: number;
  /** Requests the server answered with its verdict on them (a 2xx, or a 4xx that refuses them for what they hold). */
  requestsSent: number;
  /** Requests taken that got no such answer: the run stopped first, the server could not be reached or refused the key. */
  requestsNotDelivered: number;
  /** Why, as a message -> how many requests. */
  notDelivered: Record<string, number>;
  /** Requests with a final outcome (accepted or rejected), recorded in the journal. */
  requestsSettled: number;
  /**
   * Requests posted and left without a verdict on their items (stopped or aborted in flight, or while
   * waiting to try again, a fatal error): a resume sends them. One never posted (a stop while it
   * waited its turn or the pacer) is not one: it counts in notDelivered, and its rows as not sent.
   * Settled, abandoned and never posted, they are all the requests pulled.
   */
  requestsAbandoned: number;
  /** The rows of those requests. */
  rowsAbandoned: number;
  /**
   * Parts posted of requests refused whole for a blocklisted external_id, sent again in halves until
   * its items were alone (each part once; its tries count in attempts and retries).
   */
  requestsInParts: number;
  /** HTTP posts, first tries and retries. */
  attempts: number;
  /** Posts made again after a 5xx, a network error or an unknown outcome. */
  retries: number;
  /** 429 answers (each paused all sending; not counted as retries). */
  rateLimited: number;
  /** Posts whose outcome cannot be known: the connection broke after the request was sent. */
  unknownOutcomes: number;
  /** Every post by its answer: the HTTP status (`201`, `429`, ...), or `failed` when none came. */
  answers: Record<string, number>;
  /** Rows in requests that had an unknown outcome (a row split over several of them counts once). */
  rowsInUnknownRequests: number;
  /** Of those, rows that were (or, on resume, will be) sent again although they may have been applied. */
  rowsPossiblyDuplicated: number;
  items: Record<ArrayName, ItemTally>;
  /** The data points of the items the server accepted (docs/upload.md "Data points"). */
  dataPoints: number;
  /** Things a person should know that are not rejects (capped). */
  warnings: string[];
  elapsedMs: number;
  /** The stop signal ended the run early (requests in flight were let finish). */
  stopped: boolean;
  /** The abort signal ended it at once. */
  aborted: boolean;
  /** Why delivery stopped on its own: a DeliveryError, or an error from the plan, the journal or onReject. */
  fatal?: Error;
}

export interface DeliveryProgress extends Omit<DeliverySummary, 'fatal' | 'warnings' | 'notDelivered'> {
  /** Requests posting, waiting for a retry or for the pacer. */
  inFlight: number;
  /** How much longer all sending is held (after a 429, or by the rate-limit headers), or 0. */
  heldForMs: number;
}

export const MAX_WARNINGS = 50;

export function emptyDeliverySummary(): DeliverySummary {
  return {
    requestsPulled: 0,
    requestsSent: 0,
    requestsNotDelivered: 0,
    notDelivered: {},
    requestsSettled: 0,
    requestsAbandoned: 0,
    rowsAbandoned: 0,
    requestsInParts: 0,
    attempts: 0,
    retries: 0,
    rateLimited: 0,
    unknownOutcomes: 0,
    answers: {},
    rowsInUnknownRequests: 0,
    rowsPossiblyDuplicated: 0,
    items: {
      attributes: { sent: 0, accepted: 0, rejected: 0 },
      events: { sent: 0, accepted: 0, rejected: 0 },
      purchases: { sent: 0, accepted: 0, rejected: 0 },
    },
    dataPoints: 0,
    warnings: [],
    elapsedMs: 0,
    stopped: false,
    aborted: false,
  };
}

export function addWarning(summary: DeliverySummary, warning: string): void {
  if (summary.warnings.length < MAX_WARNINGS) summary.warnings.push(warning);
  else if (summary.warnings.length === MAX_WARNINGS) summary.warnings.push('(more warnings left out)');
}

export function progressOf(summary: DeliverySummary, inFlight: number, heldForMs: number): DeliveryProgress {
  const { fatal: _fatal, warnings: _warnings, notDelivered: _notDelivered, items, answers, ...counters } = summary;
  return {
    ...counters,
    answers: { ...answers },
    items: {
      attributes: { ...items.attributes },
      events: { ...items.events },
      purchases: { ...items.purchases },
    },
    inFlight,
    heldForMs,
  };
}
