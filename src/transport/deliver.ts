// (Over 350 lines: one delivery's loop, its settling, its stops and a blocklisted request's parts share their state.)
// Sends a plan of requests: `concurrency` in flight, paced, one user's requests in file order,
// retried through failures, each final outcome journaled and its rejected items handed back. What
// a caller gives it is in deliver-options.ts.
import { setMaxListeners } from 'node:events';
import pLimit from 'p-limit';
import type { RejectRecord } from '../model/request.js';
import { ARRAY_NAMES, type ArrayName } from '../model/types.js';
import { DEFAULT_BACKOFF } from './backoff.js';
import { addPartRows, partRows, refusedForBlocklist, sendInParts } from './blocklist-split.js';
import { systemClock } from './clock.js';
import type { DeliverOptions } from './deliver-options.js';
import { createPacer } from './pacer.js';
import { addRows, distinctRows, joinMinorErrors, wholeRequestRejects } from './request-rejects.js';
import { itemCounts, jsonBytes, requestJson, type RequestToSend } from './request.js';
import { sendRequest, type ItemPlace, type PartItems, type SendContext, type SendOutcome } from './send-request.js';
import { addWarning, emptyDeliverySummary, progressOf, type DeliverySummary } from './summary.js';
import { createUserOrder, type Turn } from './user-order.js';
import { DEFAULT_CONCURRENCY, DEFAULT_RETRIES } from './defaults.js';

export type { DeliverOptions } from './deliver-options.js';

export const DEFAULT_MAX_RATE_LIMIT_WAITS = 30;
const DEFAULT_RATE_LIMIT_WAIT_MS = 1_000;
/** Request bodies taken and not settled, at most (beyond one request); small requests never come near it. */
const MAX_HELD_BYTES = 16 * 1024 * 1024;
/** An hourly window may ask for up to an hour; more than that is a server to stop for. */
export const DEFAULT_MAX_WAIT_MS = 61 * 60_000;


/** Why a request given up got no verdict from the server, for the summary. */
function notDeliveredReason(outcome: Extract<SendOutcome, { kind: 'fatal' | 'abandoned' }>): string {
  if (outcome.error !== undefined) return outcome.error.message;
  if (outcome.kind === 'abandoned' && outcome.cutOff === true) return 'cut off after it was sent (a second Ctrl-C or signal)';
  if (outcome.kind === 'abandoned' && outcome.reason !== undefined) return `stopped while waiting to try again (${outcome.reason})`;
  if (outcome.rateLimited > 0) return 'stopped while waiting out a 429 (rate limited)';
  return outcome.attempts > 0 ? 'stopped before it was answered' : 'stopped before it was sent';
}

/** How many of the items are of each kind. */
function perKind(items: readonly ItemPlace[]): Record<ArrayName, number> {
  const counts = { attributes: 0, events: 0, purchases: 0 };
  for (const { kind } of items) counts[kind] += 1;
  return counts;
}

function positiveInteger(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) throw new RangeError(`${name} must be a whole number of at least 1`);
  return value;
}

export async function deliver(requests: AsyncIterable<RequestToSend>, options: DeliverOptions): Promise<DeliverySummary> {
  const clock = options.clock ?? systemClock;
  const concurrency = positiveInteger('concurrency', options.concurrency ?? DEFAULT_CONCURRENCY);
  const retries = options.retries ?? DEFAULT_RETRIES;
  if (!Number.isInteger(retries) || retries < 0) throw new RangeError('retries must be a whole number of at least 0');
  const pacer =
    options.pacer ??
    createPacer({
      perSecond: options.rate,
      perHour: options.hourly,
      clock,
      marginMs: options.windowMarginMs,
      onLongWait: ({ untilMs, reason }) => options.onNotice?.({ type: 'waiting', reason, untilWallMs: clock.wallNow() + (untilMs - clock.now()) }),
    });
  const startedAt = clock.now();
  const summary = emptyDeliverySummary();
  summary.rowsPossiblyDuplicated = options.carriedDuplicates ?? 0;

  // stop: no new requests or attempts; abort: also cut off posts on the wire
  const stop = new AbortController();
  const abort = new AbortController();
  // every request in flight listens to both
  setMaxListeners(0, stop.signal, abort.signal);
  /** Requests posted and not answered yet: what a stop waits for. */
  let posting = 0;
  const onStop = (): void => {
    summary.stopped = true;
    stop.abort(new Error('stopped'));
    // told at once, so that a person sees the stop was taken and what it waits for
    options.onNotice?.({ type: 'stopping', inFlight: posting });
  };
  const onAbort = (): void => {
    summary.aborted = true;
    stop.abort(new Error('aborted'));
    abort.abort(new Error('aborted'));
  };
  if (options.stopSignal?.aborted) onStop();
  else options.stopSignal?.addEventListener('abort', onStop, { once: true });
  if (options.abortSignal?.aborted) onAbort();
  else options.abortSignal?.addEventListener('abort', onAbort, { once: true });

  const notDelivered = (reason: string): void => {
    summary.requestsNotDelivered += 1;
    summary.notDelivered[reason] = (summary.notDelivered[reason] ?? 0) + 1;
  };

  /** The rows of requests whose outcome was not known once, and of those that may have been applied twice: a row split over several of them is one. */
  const unknownRows = new Set<string>();
  const duplicatedRows = new Set<string>();
  /** Rows counted as possibly duplicated by runs before this one that were stopped in their turn (the journal carries them). */
  const duplicatedBefore = options.carriedDuplicates ?? 0;
  /** The rows of the requests left without a verdict: a row split over several of them is one. */
  const abandonedRows = new Set<string>();
  /** A request posted and left without a verdict on its items: a resume sends its rows. */
  const abandoned = (request: RequestToSend): void => {
    summary.requestsAbandoned += 1;
    summary.rowsAbandoned = addRows(request, abandonedRows).size;
  };

  const fail = (error: unknown): void => {
    summary.fatal ??= error instanceof Error ? error : new Error(String(error));
    stop.abort(summary.fatal);
  };

  const ctx: SendContext = {
    post: async (json, signal, onSent) => {
      posting += 1;
      try {
        const result = await options.client.post(json, signal, onSent);
        const answer = result.kind === 'response' ? String(result.status) : 'failed';
        summary.answers[answer] = (summary.answers[answer] ?? 0) + 1;
        return result;
      } finally {
        posting -= 1;
      }
    },
    endpoint: options.client.endpoint,
    pacer,
    clock,
    random: options.random ?? Math.random,
    retries,
    backoff: options.backoff ?? DEFAULT_BACKOFF,
    maxRateLimitWaits: options.maxRateLimitWaits ?? DEFAULT_MAX_RATE_LIMIT_WAITS,
    defaultRateLimitWaitMs: DEFAULT_RATE_LIMIT_WAIT_MS,
    maxWaitMs: options.maxWaitMs ?? DEFAULT_MAX_WAIT_MS,
    onUnknown: options.onUnknown ?? 'retry',
    answers: { endpoint: 0 },
    stopSignal: stop.signal,
    abortSignal: abort.signal,
    notify: (notice) => options.onNotice?.(notice),
  };

  const limit = pLimit(concurrency);
  const order = createUserOrder();
  let inFlight = 0;

  const reportProgress = (): void => {
    const now = clock.now();
    options.onProgress?.(progressOf({ ...summary, elapsedMs: now - startedAt }, inFlight, Math.max(0, pacer.heldUntil - now)));
  };

  /** Hands each reject over; what one that cannot be taken threw is returned, once every one was offered. */
  const reject = async (records: RejectRecord[]): Promise<unknown> => {
    let failure: unknown;
    for (const record of records) {
      try {
        await options.onReject?.(record);
      } catch (error) {
        failure ??= error;
      }
    }
    return failure;
  };

  /** Counts an outcome, hands back its rejects, and journals its rows when it is final. `marked`: recorded as sent. */
  const settle = async (request: RequestToSend, outcome: SendOutcome, marked: boolean): Promise<void> => {
    summary.attempts += outcome.attempts;
    summary.retries += outcome.retries;
    summary.rateLimited += outcome.rateLimited;
    summary.unknownOutcomes += outcome.unknownOutcomes;
    const counts = itemCounts(request);
    // a request sent in parts: a part's unknown outcome is its items' alone
    const parts = outcome.parts;
    // rows an earlier run may have delivered are doubled only if this request may have been applied too
    const mayApply = outcome.kind === 'accepted' || outcome.possiblyApplied;
    // (rows an earlier run left in doubt, sent again: in the one set, so a row is counted once however it comes)
    if (mayApply && options.inDoubtRows !== undefined) options.inDoubtRows(request, duplicatedRows);
    if (outcome.unknownOutcomes > 0) {
      const rowsOf = (items: ItemPlace[] | undefined, into: Set<string>): Set<string> => (items === undefined ? addRows(request, into) : addPartRows(request, items, into));
      summary.rowsInUnknownRequests = rowsOf(parts?.unknown, unknownRows).size;
      // doubled only once sent again: the rows of one a stop cut off stay in doubt, and the run that sends them again counts them
      if (parts !== undefined || outcome.reposted) rowsOf(parts?.possiblyApplied, duplicatedRows);
    }
    summary.rowsPossiblyDuplicated = duplicatedBefore + duplicatedRows.size;
    if (outcome.kind === 'fatal' || outcome.kind === 'abandoned') {
      // one never posted (stopped while it waited for the pacer, its record not written) counts its rows as not sent
      if (outcome.attempts > 0 || (outcome.kind === 'abandoned' && outcome.cutOff === true)) abandoned(request);
      notDelivered(notDeliveredReason(outcome));
      if (marked && !outcome.possiblyApplied) options.notApplied?.(request);
      // its rows stay in doubt in the journal (nothing waits for the state here: the run is ending,
      // and a state that failed ends it with its own error when it is closed)
      if (marked && outcome.possiblyApplied) {
        try {
          options.onInDoubt?.(request)?.catch(() => undefined);
        } catch {
          // (the state failed before: see above)
        }
      }
      if (outcome.error !== undefined) fail(outcome.error);
      return;
    }
    if (outcome.kind !== 'unknown-rejected') {
      summary.requestsSent += 1;
      // the items of parts rejected with no verdict were not answered for (see settleFinal)
      const noVerdict = parts === undefined ? undefined : perKind(parts.noVerdict);
      for (const kind of ARRAY_NAMES) summary.items[kind].sent += counts[kind] - (noVerdict?.[kind] ?? 0);
    }
    try {
      await settleFinal(request, outcome, counts, marked);
    } catch (error) {
      abandoned(request);
      throw error;
    }
    summary.requestsSettled += 1;
  };

  /** Counts the items of parts rejected with no verdict (onUnknown 'reject') as a request rejected so counts its own: rejected (as the join counted them), of unknown outcome. */
  const countNoVerdict = (parts: PartItems | undefined): void => {
    if (parts === undefined) return;
    const noVerdict = perKind(parts.noVerdict);
    for (const kind of ARRAY_NAMES) if (noVerdict[kind] > 0) summary.items[kind].unknown = (summary.items[kind].unknown ?? 0) + noVerdict[kind];
  };

  const settleFinal = async (
    request: RequestToSend,
    outcome: Extract<SendOutcome, { kind: 'accepted' | 'rejected' | 'unknown-rejected' }>,
    counts: ReturnType<typeof itemCounts>,
    marked: boolean,
  ): Promise<void> => {
    let failure: unknown;
    let learned: Promise<void> | undefined;
    switch (outcome.kind) {
      case 'accepted': {
        const joined = joinMinorErrors(request, outcome.response.errors);
        for (const warning of joined.unmatched) addWarning(summary, warning);
        failure = await reject(joined.rejects);
        for (const kind of ARRAY_NAMES) {
          summary.items[kind].accepted += counts[kind] - joined.rejectedPerKind[kind];
          summary.items[kind].rejected += joined.rejectedPerKind[kind];
        }
        countNoVerdict(outcome.parts);
        const points = request.points ?? [];
        for (let i = 0; i < points.length; i += 1) if (!joined.rejectedItems.has(i)) summary.dataPoints += points[i];
        if (outcome.inDoubt !== true) learned = options.onAccepted?.(request, joined.rejectedItems);
        else if (marked) learned = options.onInDoubt?.(request);
        break;
      }
      case 'rejected':
      case 'unknown-rejected':
        failure = await reject(wholeRequestRejects(request, outcome.message, outcome.kind === 'rejected' ? outcome.errors : undefined));
        for (const kind of ARRAY_NAMES) {
          summary.items[kind].rejected += counts[kind];
          if (outcome.kind === 'unknown-rejected' && counts[kind] > 0) summary.items[kind].unknown = (summary.items[kind].unknown ?? 0) + counts[kind];
        }
        if (outcome.kind === 'rejected') countNoVerdict(outcome.parts);
        // refused for an outcome not known, or refused after an attempt whose outcome was not: it may have been applied
        if (marked && (outcome.kind === 'unknown-rejected' || outcome.possiblyApplied)) learned = options.onInDoubt?.(request);
        break;
    }
    // after the rejects are handed over: a crash in between sends the rows again rather than lose them.
    // Rejects that could not be taken stop the run, but the outcome is known: the rows settle (the
    // journal carries what the rejects file could not take) and the server is not asked again
    if (learned === undefined) options.journal?.record(request);
    // journaled once the state holds what it set (not waited for here: the slot goes to the next
    // request); a state that fails leaves the rows in doubt, and the run stops with its error
    else learned.then(() => options.journal?.record(request), () => undefined);
    if (failure !== undefined) fail(failure);
  };

  /**
   * A request refused whole for a blocklisted external_id, sent again in parts (blocklist-split.ts).
   * Its parts are one request in flight: a stop lets them all be sent and answered (only an abort
   * cuts them), so the request settles whole, and a resume sends none of the parts it applied again.
   */
  const partCtx: SendContext = { ...ctx, stopSignal: ctx.abortSignal };
  const sendParts = async (request: RequestToSend, refused: SendOutcome & { kind: 'rejected' }): Promise<SendOutcome> => {
    const split = await sendInParts(request, refused, (json, items) =>
      sendRequest(json, request.seq, partCtx, { beforeRepost: options.sentAgain && (() => options.sentAgain?.(partRows(request, items))) }),
    );
    summary.requestsInParts += split.parts;
    if (split.warning !== undefined) addWarning(summary, split.warning);
    return split.outcome;
  };

  const run = async (request: RequestToSend, turn: Turn): Promise<void> => {
    try {
      await turn.ready;
      await limit(async () => {
        if (stop.signal.aborted) {
          // never posted: its rows count as not sent (rowsNotSent), not as left without a verdict
          notDelivered('stopped before it was sent');
          return;
        }
        inFlight += 1;
        try {
          const before = options.beforeFirstPost;
          let marked = false;
          let outcome = await sendRequest(requestJson(request), request.seq, ctx, {
            beforeFirstPost:
              before &&
              (async () => {
                await before(request);
                marked = true;
              }),
            beforeRepost: options.sentAgain && (() => options.sentAgain?.(distinctRows(request))),
          });
          if (outcome.kind === 'rejected' && refusedForBlocklist(outcome)) outcome = await sendParts(request, outcome);
          await settle(request, outcome, marked);
        } finally {
          inFlight -= 1;
        }
      });
    } catch (error) {
      fail(error);
    } finally {
      turn.done();
      reportProgress();
    }
  };

  const tasks = new Set<Promise<void>>();
  // the puller waits either for room or for the next request; a stop wakes it from both
  let roomMade: (() => void) | undefined;
  let stopWhileReading: (() => void) | undefined;
  stop.signal.addEventListener(
    'abort',
    () => {
      options.onStop?.();
      roomMade?.();
      stopWhileReading?.();
    },
    { once: true },
  );
  // taken but not settled; a few beyond `concurrency` keep slots busy while one user's requests queue
  const maxHeld = concurrency * 2;
  // and no more than this much of their bodies (rows of thousands of columns make bodies of megabytes)
  let heldBytes = 0;

  const iterator = requests[Symbol.asyncIterator]();
  let finished = false;
  try {
    while (!stop.signal.aborted) {
      if (tasks.size >= maxHeld || (tasks.size > 0 && heldBytes >= MAX_HELD_BYTES)) {
        await new Promise<void>((resolve) => {
          roomMade = resolve;
        });
        roomMade = undefined;
        continue;
      }
      // not Promise.race with one long-lived promise: that would keep a reaction per request
      const next = await new Promise<IteratorResult<RequestToSend> | 'stopped'>((resolve, reject) => {
        stopWhileReading = () => resolve('stopped');
        iterator.next().then(resolve, reject);
      });
      stopWhileReading = undefined;
      if (next === 'stopped' || stop.signal.aborted) break;
      if (next.done === true) {
        finished = true;
        break;
      }
      summary.requestsPulled += 1;
      const request = next.value;
      const bytes = jsonBytes(request);
      heldBytes += bytes;
      const task = run(request, order.enter(request.userKeys)).finally(() => {
        heldBytes -= bytes;
        tasks.delete(task);
        roomMade?.();
      });
      tasks.add(task);
    }
  } catch (error) {
    finished = true; // a generator that threw is done
    fail(error);
  }
  if (!finished) void Promise.resolve(iterator.return?.()).catch(() => undefined);

  while (tasks.size > 0) await Promise.all([...tasks]);
  try {
    await options.journal?.flush();
  } catch (error) {
    fail(error);
  }
  options.stopSignal?.removeEventListener('abort', onStop);
  options.abortSignal?.removeEventListener('abort', onAbort);
  summary.elapsedMs = clock.now() - startedAt;
  return summary;
}
