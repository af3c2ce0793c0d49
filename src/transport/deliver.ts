// (Over 350 lines: one delivery's loop, its settling, its stops and a blocklisted request's parts share their state: one class.)
// Sends a plan of requests: `concurrency` in flight, paced, one user's requests in file order,
// retried through failures, each final outcome journaled and its rejected items handed back. What
// a caller gives it is in deliver-options.ts.
import { setMaxListeners } from 'node:events';
import pLimit, { type LimitFunction } from 'p-limit';
import type { RejectRecord } from '../model/request.js';
import { ARRAY_NAMES } from '../model/types.js';
import { DEFAULT_BACKOFF } from './backoff.js';
import { partRows, refusedForBlocklist, sendInParts } from './blocklist-split.js';
import { systemClock, type Clock } from './clock.js';
import type { DeliverOptions } from './deliver-options.js';
import { createPacer, type Pacer } from './pacer.js';
import { distinctRows, joinMinorErrors, wholeRequestRejects } from './request-rejects.js';
import { itemCounts, jsonBytes, requestJson, type RequestToSend } from './request.js';
import type { PostResult } from './http-client.js';
import { sendRequest, type SendContext, type SendOutcome } from './send-request.js';
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

function positiveInteger(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) throw new RangeError(`${name} must be a whole number of at least 1`);
  return value;
}

export async function deliver(requests: AsyncIterable<RequestToSend>, options: DeliverOptions): Promise<DeliverySummary> {
  const delivery = new Delivery(options);
  await delivery.pull(requests);
  return delivery.finish();
}

/**
 * One delivery: what it has taken and not settled, its stop and abort, its counts. pull() takes the
 * plan's requests while there is room and sends each (send), settling its outcome (settle); finish()
 * waits for those in flight and gives the summary.
 */
class Delivery {
  readonly #options: DeliverOptions;
  readonly #clock: Clock;
  readonly #pacer: Pacer;
  readonly #startedAt: number;
  readonly #summary = emptyDeliverySummary();
  /** stop: no new requests or attempts; abort: also cut off posts on the wire (every request in flight listens to both). */
  readonly #stop = new AbortController();
  readonly #abort = new AbortController();
  readonly #ctx: SendContext;
  /** The context of a request's parts (sendParts): only an abort cuts them off. */
  readonly #partCtx: SendContext;
  readonly #limit: LimitFunction;
  readonly #order = createUserOrder();
  /** Requests posted and not answered yet: what a stop waits for. */
  #posting = 0;
  #inFlight = 0;
  /** Requests taken and not settled, and the bytes of their bodies. */
  readonly #tasks = new Set<Promise<void>>();
  #heldBytes = 0;
  /** Taken but not settled, at most: a few beyond `concurrency` keep slots busy while one user's requests queue. */
  readonly #maxHeld: number;
  /** The puller waits either for room or for the next request; a stop wakes it from both. */
  #roomMade: (() => void) | undefined;
  #stopWhileReading: (() => void) | undefined;

  constructor(options: DeliverOptions) {
    this.#options = options;
    const clock = (this.#clock = options.clock ?? systemClock);
    const concurrency = positiveInteger('concurrency', options.concurrency ?? DEFAULT_CONCURRENCY);
    const retries = options.retries ?? DEFAULT_RETRIES;
    if (!Number.isInteger(retries) || retries < 0) throw new RangeError('retries must be a whole number of at least 0');
    this.#pacer =
      options.pacer ??
      createPacer({
        perSecond: options.rate,
        perHour: options.hourly,
        clock,
        marginMs: options.windowMarginMs,
        onLongWait: ({ untilMs, reason }) => options.onNotice?.({ type: 'waiting', reason, untilWallMs: clock.wallNow() + (untilMs - clock.now()) }),
      });
    this.#startedAt = clock.now();
    this.#summary.rowsPossiblyDuplicated = options.carriedDuplicates ?? 0;
    setMaxListeners(0, this.#stop.signal, this.#abort.signal);
    if (options.stopSignal?.aborted) this.#onStop();
    else options.stopSignal?.addEventListener('abort', this.#onStop, { once: true });
    if (options.abortSignal?.aborted) this.#onAbort();
    else options.abortSignal?.addEventListener('abort', this.#onAbort, { once: true });
    this.#ctx = {
      post: (json, signal, onSent) => this.#post(json, signal, onSent),
      endpoint: options.client.endpoint,
      pacer: this.#pacer,
      clock,
      random: options.random ?? Math.random,
      retries,
      backoff: options.backoff ?? DEFAULT_BACKOFF,
      maxRateLimitWaits: options.maxRateLimitWaits ?? DEFAULT_MAX_RATE_LIMIT_WAITS,
      defaultRateLimitWaitMs: DEFAULT_RATE_LIMIT_WAIT_MS,
      maxWaitMs: options.maxWaitMs ?? DEFAULT_MAX_WAIT_MS,
      onUnknown: options.onUnknown ?? 'retry',
      answers: { endpoint: 0 },
      stopSignal: this.#stop.signal,
      abortSignal: this.#abort.signal,
      notify: (notice) => options.onNotice?.(notice),
    };
    this.#partCtx = { ...this.#ctx, stopSignal: this.#ctx.abortSignal };
    this.#limit = pLimit(concurrency);
    this.#maxHeld = concurrency * 2;
    this.#stop.signal.addEventListener(
      'abort',
      () => {
        options.onStop?.();
        this.#roomMade?.();
        this.#stopWhileReading?.();
      },
      { once: true },
    );
  }

  readonly #onStop = (): void => {
    this.#summary.stopped = true;
    this.#stop.abort(new Error('stopped'));
    // told at once, so that a person sees the stop was taken and what it waits for
    this.#options.onNotice?.({ type: 'stopping', inFlight: this.#posting });
  };

  readonly #onAbort = (): void => {
    this.#summary.aborted = true;
    this.#stop.abort(new Error('aborted'));
    this.#abort.abort(new Error('aborted'));
  };

  async #post(json: string | Uint8Array, signal: AbortSignal | undefined, onSent: (() => void) | undefined): Promise<PostResult> {
    this.#posting += 1;
    try {
      const result = await this.#options.client.post(json, signal, onSent);
      const answer = result.kind === 'response' ? String(result.status) : 'failed';
      this.#summary.answers[answer] = (this.#summary.answers[answer] ?? 0) + 1;
      return result;
    } finally {
      this.#posting -= 1;
    }
  }

  #notDelivered(reason: string): void {
    this.#summary.requestsNotDelivered += 1;
    this.#summary.notDelivered[reason] = (this.#summary.notDelivered[reason] ?? 0) + 1;
  }

  /** A request taken and left without a final outcome: a resume sends its rows. */
  #abandoned(request: RequestToSend): void {
    this.#summary.requestsAbandoned += 1;
    this.#summary.rowsAbandoned += distinctRows(request);
  }

  #fail(error: unknown): void {
    this.#summary.fatal ??= error instanceof Error ? error : new Error(String(error));
    this.#stop.abort(this.#summary.fatal);
  }

  #reportProgress(): void {
    const now = this.#clock.now();
    this.#options.onProgress?.(progressOf({ ...this.#summary, elapsedMs: now - this.#startedAt }, this.#inFlight, Math.max(0, this.#pacer.heldUntil - now)));
  }

  /** Hands each reject over; what one that cannot be taken threw is returned, once every one was offered. */
  async #reject(records: RejectRecord[]): Promise<unknown> {
    let failure: unknown;
    for (const record of records) {
      try {
        await this.#options.onReject?.(record);
      } catch (error) {
        failure ??= error;
      }
    }
    return failure;
  }

  /** Counts an outcome, hands back its rejects, and journals its rows when it is final. `marked`: recorded as sent. */
  async #settle(request: RequestToSend, outcome: SendOutcome, marked: boolean): Promise<void> {
    const summary = this.#summary;
    const options = this.#options;
    summary.attempts += outcome.attempts;
    summary.retries += outcome.retries;
    summary.rateLimited += outcome.rateLimited;
    summary.unknownOutcomes += outcome.unknownOutcomes;
    const counts = itemCounts(request);
    // rows an earlier run may have delivered are doubled only if this request may have been applied too
    const mayApply = outcome.kind === 'accepted' || outcome.possiblyApplied;
    if (mayApply && options.inDoubtRows !== undefined) summary.rowsPossiblyDuplicated += options.inDoubtRows(request);
    if (outcome.unknownOutcomes > 0) {
      const rows = distinctRows(request);
      summary.rowsInUnknownRequests += rows;
      if (outcome.possiblyApplied) summary.rowsPossiblyDuplicated += rows;
    }
    if (outcome.kind === 'fatal' || outcome.kind === 'abandoned') return this.#settleUnfinished(request, outcome, marked);
    if (outcome.kind !== 'unknown-rejected') {
      summary.requestsSent += 1;
      for (const kind of ARRAY_NAMES) summary.items[kind].sent += counts[kind];
    }
    try {
      await this.#settleFinal(request, outcome, counts, marked);
    } catch (error) {
      this.#abandoned(request);
      throw error;
    }
    summary.requestsSettled += 1;
  }

  /** A request given up (a stop, an abort, a failure): its rows are sent again by a resume, or held in doubt. */
  #settleUnfinished(request: RequestToSend, outcome: Extract<SendOutcome, { kind: 'fatal' | 'abandoned' }>, marked: boolean): void {
    this.#abandoned(request);
    this.#notDelivered(notDeliveredReason(outcome));
    if (marked && !outcome.possiblyApplied) this.#options.notApplied?.(request);
    // its rows stay in doubt in the journal (nothing waits for the state here: the run is ending,
    // and a state that failed ends it with its own error when it is closed)
    if (marked && outcome.possiblyApplied) {
      try {
        this.#options.onInDoubt?.(request)?.catch(() => undefined);
      } catch {
        // (the state failed before: see above)
      }
    }
    if (outcome.error !== undefined) this.#fail(outcome.error);
  }

  async #settleFinal(
    request: RequestToSend,
    outcome: Extract<SendOutcome, { kind: 'accepted' | 'rejected' | 'unknown-rejected' }>,
    counts: ReturnType<typeof itemCounts>,
    marked: boolean,
  ): Promise<void> {
    const summary = this.#summary;
    const options = this.#options;
    let failure: unknown;
    let learned: Promise<void> | undefined;
    switch (outcome.kind) {
      case 'accepted': {
        const joined = joinMinorErrors(request, outcome.response.errors);
        for (const warning of joined.unmatched) addWarning(summary, warning);
        failure = await this.#reject(joined.rejects);
        for (const kind of ARRAY_NAMES) {
          summary.items[kind].accepted += counts[kind] - joined.rejectedPerKind[kind];
          summary.items[kind].rejected += joined.rejectedPerKind[kind];
        }
        const points = request.points ?? [];
        for (let i = 0; i < points.length; i += 1) if (!joined.rejectedItems.has(i)) summary.dataPoints += points[i];
        if (outcome.inDoubt !== true) learned = options.onAccepted?.(request, joined.rejectedItems);
        else if (marked) learned = options.onInDoubt?.(request);
        break;
      }
      case 'rejected':
      case 'unknown-rejected':
        failure = await this.#reject(wholeRequestRejects(request, outcome.message, outcome.kind === 'rejected' ? outcome.errors : undefined));
        for (const kind of ARRAY_NAMES) summary.items[kind].rejected += counts[kind];
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
    if (failure !== undefined) this.#fail(failure);
  }

  /**
   * A request refused whole for a blocklisted external_id, sent again in parts (blocklist-split.ts).
   * Its parts are one request in flight: a stop lets them all be sent and answered (only an abort
   * cuts them), so the request settles whole, and a resume sends none of the parts it applied again.
   */
  async #sendParts(request: RequestToSend, refused: SendOutcome & { kind: 'rejected' }): Promise<SendOutcome> {
    const sentAgain = this.#options.sentAgain;
    const split = await sendInParts(request, refused, (json, items) =>
      sendRequest(json, request.seq, this.#partCtx, { beforeRepost: sentAgain && (() => sentAgain(partRows(request, items))) }),
    );
    this.#summary.requestsInParts += split.parts;
    if (split.warning !== undefined) addWarning(this.#summary, split.warning);
    return split.outcome;
  }

  /** Sends a request once its user's earlier requests went (`turn`) and a slot is free, and settles it. */
  async #send(request: RequestToSend, turn: Turn): Promise<void> {
    try {
      await turn.ready;
      await this.#limit(async () => {
        if (this.#stop.signal.aborted) {
          this.#abandoned(request);
          this.#notDelivered('stopped before it was sent');
          return;
        }
        this.#inFlight += 1;
        try {
          const { beforeFirstPost: before, sentAgain } = this.#options;
          let marked = false;
          let outcome = await sendRequest(requestJson(request), request.seq, this.#ctx, {
            beforeFirstPost:
              before &&
              (async () => {
                await before(request);
                marked = true;
              }),
            beforeRepost: sentAgain && (() => sentAgain(distinctRows(request))),
          });
          if (outcome.kind === 'rejected' && refusedForBlocklist(outcome)) outcome = await this.#sendParts(request, outcome);
          await this.#settle(request, outcome, marked);
        } finally {
          this.#inFlight -= 1;
        }
      });
    } catch (error) {
      this.#fail(error);
    } finally {
      turn.done();
      this.#reportProgress();
    }
  }

  /** Takes the plan's requests while there is room (in count and in bytes), each sent as it comes, until the plan ends or a stop. */
  async pull(requests: AsyncIterable<RequestToSend>): Promise<void> {
    const iterator = requests[Symbol.asyncIterator]();
    let finished = false;
    try {
      while (!this.#stop.signal.aborted) {
        if (this.#tasks.size >= this.#maxHeld || (this.#tasks.size > 0 && this.#heldBytes >= MAX_HELD_BYTES)) {
          await new Promise<void>((resolve) => {
            this.#roomMade = resolve;
          });
          this.#roomMade = undefined;
          continue;
        }
        // not Promise.race with one long-lived promise: that would keep a reaction per request
        const next = await new Promise<IteratorResult<RequestToSend> | 'stopped'>((resolve, reject) => {
          this.#stopWhileReading = () => resolve('stopped');
          iterator.next().then(resolve, reject);
        });
        this.#stopWhileReading = undefined;
        if (next === 'stopped' || this.#stop.signal.aborted) break;
        if (next.done === true) {
          finished = true;
          break;
        }
        this.#take(next.value);
      }
    } catch (error) {
      finished = true; // a generator that threw is done
      this.#fail(error);
    }
    if (!finished) void Promise.resolve(iterator.return?.()).catch(() => undefined);
  }

  /** A request taken: held (its body counted) until it settles. */
  #take(request: RequestToSend): void {
    this.#summary.requestsPulled += 1;
    const bytes = jsonBytes(request);
    this.#heldBytes += bytes;
    const task = this.#send(request, this.#order.enter(request.userKeys)).finally(() => {
      this.#heldBytes -= bytes;
      this.#tasks.delete(task);
      this.#roomMade?.();
    });
    this.#tasks.add(task);
  }

  /** Waits for every request taken to settle, flushes the journal, and gives the summary. */
  async finish(): Promise<DeliverySummary> {
    while (this.#tasks.size > 0) await Promise.all([...this.#tasks]);
    try {
      await this.#options.journal?.flush();
    } catch (error) {
      this.#fail(error);
    }
    this.#options.stopSignal?.removeEventListener('abort', this.#onStop);
    this.#options.abortSignal?.removeEventListener('abort', this.#onAbort);
    this.#summary.elapsedMs = this.#clock.now() - this.#startedAt;
    return this.#summary;
  }
}
