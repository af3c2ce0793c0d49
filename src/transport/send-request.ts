// One request's life: wait for the pacer, post, and act on the verdict until it has a final
// outcome (accepted, rejected), must be given up (fatal, stop), or has spent its retries.
import { DeliveryError } from '../errors.js';
import type { ArrayName, SuccessResponse } from '../model/types.js';
import { backoffDelay, type BackoffPolicy } from './backoff.js';
import { sleep, type Clock } from './clock.js';
import type { PostResult } from './http-client.js';
import type { Pacer, WaitReason } from './pacer.js';
import { parseRateLimit } from './rate-limit-headers.js';
import { classifyResult } from './retry-policy.js';

export type OnUnknown = 'retry' | 'reject';

export type DeliveryNotice =
  | { type: 'rate-limited'; seq: number; waitMs: number }
  /** All sending waits more than a few seconds: until `untilWallMs` (epoch ms), for `reason`. */
  | { type: 'waiting'; reason: WaitReason; untilWallMs: number }
  | { type: 'retry'; seq: number; failure: number; delayMs: number; reason: string }
  | { type: 'unknown-outcome'; seq: number; action: OnUnknown; reason: string }
  /** Something a person should know at once, such as a shared rate budget that failed. */
  | { type: 'warning'; message: string }
  /** The stop signal came: no request starts now, and the `inFlight` posted wait for their answers. */
  | { type: 'stopping'; inFlight: number };

export interface SendContext {
  post(json: string | Uint8Array, signal?: AbortSignal, onSent?: () => void): Promise<PostResult>;
  /** Where requests go, for messages. */
  endpoint: string;
  pacer: Pacer;
  clock: Clock;
  random: () => number;
  /** Attempts allowed after the first for 5xx, network errors and unknown outcomes. */
  retries: number;
  backoff: BackoffPolicy;
  /** 429 answers one request may take before the run stops. */
  maxRateLimitWaits: number;
  /** Used when a 429 names no wait. */
  defaultRateLimitWaitMs: number;
  /** The longest wait the server may ask for (429, or Retry-After on a 5xx) before the run stops. */
  maxWaitMs: number;
  onUnknown: OnUnknown;
  /**
   * The run's answers so far that looked like the endpoint's (shared by its requests): while there
   * are none, a 2xx that does not look like it stops the run instead of being tried again.
   */
  answers: { endpoint: number };
  /** No new attempt starts once this fires. */
  stopSignal: AbortSignal;
  /** Attempts on the wire are cut off when this fires. */
  abortSignal: AbortSignal;
  notify(notice: DeliveryNotice): void;
}

export interface AttemptStats {
  attempts: number;
  /** Attempts the server answered (any HTTP status). */
  answered: number;
  retries: number;
  rateLimited: number;
  unknownOutcomes: number;
  /** An attempt may have been applied and the request was, or will be, sent again. */
  possiblyApplied: boolean;
  /**
   * It was sent again after such an attempt: it may have been applied twice. (One cut off by a
   * stop, or refused by a stop while it waited to be sent again, may have been applied once: a resume
   * that sends it again counts it then.)
   */
  reposted: boolean;
}

/** An item of a request: its array, and its place there. */
export interface ItemPlace {
  kind: ArrayName;
  index: number;
}

/**
 * Of a request sent again in parts (blocklist-split.ts), the items of the parts whose outcome was
 * not known once (`unknown`), that may have been applied twice (`possiblyApplied`), and that got no
 * verdict and were rejected so (`noVerdict`, onUnknown 'reject'): the request's counts are theirs,
 * not the whole request's.
 */
export interface PartItems {
  unknown: ItemPlace[];
  possiblyApplied: ItemPlace[];
  noVerdict: ItemPlace[];
}

/** How a request ended (`parts`: sent in parts, and how they went). */
export type Ending = { parts?: PartItems } & (
  /**
   * `inDoubt`: accepted in parts, and a part refused may have been applied (its outcome not known
   * at first): what the request set is held in doubt rather than learned.
   */
  | { kind: 'accepted'; response: SuccessResponse; inDoubt?: boolean }
  /** `errors`: the minor error entries of a refusal of every item, for each item its own reason. */
  | { kind: 'rejected'; message: string; errors?: unknown[] }
  /** The outcome could not be known and onUnknown is 'reject'. */
  | { kind: 'unknown-rejected'; message: string }
  | { kind: 'fatal'; error: DeliveryError }
  /**
   * Given up unsent or unanswered: a stop (`reason`: the failure it was waiting to try again after;
   * `cutOff`: posted, and cut off by the abort), or (with `error`) the journal or --out could not record it.
   */
  | { kind: 'abandoned'; error?: Error; reason?: string; cutOff?: boolean }
);

export type SendOutcome = AttemptStats & Ending;

/**
 * The outcome: the counts copied one by one into a literal of their own, then the ending. Built as
 * `{ ...stats, kind }`, each outcome was an object of over 1 KB that outlived the young generation,
 * so every request left one in the old space until a full collection.
 */
function ended(stats: AttemptStats, ending: Ending): SendOutcome {
  const counts: AttemptStats = {
    attempts: stats.attempts,
    answered: stats.answered,
    retries: stats.retries,
    rateLimited: stats.rateLimited,
    unknownOutcomes: stats.unknownOutcomes,
    possiblyApplied: stats.possiblyApplied,
    reposted: stats.reposted,
  };
  return Object.assign(counts, ending);
}

export interface RequestHooks {
  /**
   * Runs once, after the pacer allows the first attempt and before it is posted (the journal records
   * the rows as sent there); if it fails, the request is given up unsent.
   */
  beforeFirstPost?: () => Promise<void>;
  /** Runs before a post that follows an outcome that could not be known (the request may be applied twice). */
  beforeRepost?: () => void;
}

export async function sendRequest(json: string | Uint8Array, seq: number, ctx: SendContext, hooks: RequestHooks = {}): Promise<SendOutcome> {
  const { beforeFirstPost, beforeRepost } = hooks;
  const stats: AttemptStats = { attempts: 0, answered: 0, retries: 0, rateLimited: 0, unknownOutcomes: 0, possiblyApplied: false, reposted: false };
  let failures = 0;

  /** Backs off before the next try, or gives up when the retries are spent. */
  let lastReason: string | undefined;
  const afterFailure = async (reason: string, minDelayMs = 0): Promise<SendOutcome | undefined> => {
    lastReason = reason;
    failures += 1;
    if (failures > ctx.retries) {
      const message = `gave up on ${ctx.endpoint} after ${ctx.retries} ${ctx.retries === 1 ? 'retry' : 'retries'}: ${reason}`;
      return ended(stats, { kind: 'fatal', error: new DeliveryError(message) });
    }
    const delayMs = Math.max(backoffDelay(failures, ctx.backoff, ctx.random), minDelayMs);
    ctx.notify({ type: 'retry', seq, failure: failures, delayMs, reason });
    try {
      await sleep(ctx.clock, delayMs, ctx.stopSignal);
    } catch {
      return ended(stats, { kind: 'abandoned', reason });
    }
    stats.retries += 1;
    return undefined;
  };

  for (;;) {
    if (ctx.stopSignal.aborted) return ended(stats, { kind: 'abandoned', reason: lastReason });
    let ticket: number;
    try {
      ticket = await ctx.pacer.acquire(ctx.stopSignal);
    } catch {
      return ended(stats, { kind: 'abandoned', reason: lastReason });
    }
    if (stats.attempts === 0 && beforeFirstPost !== undefined) {
      try {
        await beforeFirstPost();
      } catch (error) {
        ctx.pacer.release(ticket);
        return ended(stats, { kind: 'abandoned', error: error instanceof Error ? error : new Error(String(error)) });
      }
    }
    if (stats.possiblyApplied) {
      stats.reposted = true;
      beforeRepost?.();
    }
    stats.attempts += 1;
    const result = await ctx.post(json, ctx.abortSignal, () => ctx.pacer.markSent(ticket));
    ctx.pacer.release(ticket);
    if (result.kind === 'response') {
      stats.answered += 1;
      ctx.pacer.observe(parseRateLimit(result.headers, ctx.clock.wallNow()), ticket);
    }
    const verdict = classifyResult(result, ctx.clock.wallNow());
    if (result.kind === 'response' && verdict.kind !== 'not-endpoint') ctx.answers.endpoint += 1;

    switch (verdict.kind) {
      case 'accepted':
        return ended(stats, { kind: 'accepted', response: verdict.response });
      case 'reject':
        return ended(stats, { kind: 'rejected', message: verdict.message, errors: verdict.errors });
      case 'fatal':
        return ended(stats, { kind: 'fatal', error: new DeliveryError(verdict.message, verdict.status) });
      case 'aborted':
        if (verdict.sent) {
          stats.unknownOutcomes += 1;
          stats.possiblyApplied = true;
        }
        return ended(stats, verdict.sent ? { kind: 'abandoned', cutOff: true } : { kind: 'abandoned', reason: lastReason });
      case 'rate-limited': {
        stats.rateLimited += 1;
        if (stats.rateLimited > ctx.maxRateLimitWaits) {
          const message = `the server still refused request ${seq} with 429 (rate limited) after ${ctx.maxRateLimitWaits} waits; lower --rate or --hourly`;
          return ended(stats, { kind: 'fatal', error: new DeliveryError(message, 429) });
        }
        // spec 8: the limit is the account's, so every request waits, not only this one
        const waitMs = verdict.waitMs ?? ctx.defaultRateLimitWaitMs;
        if (waitMs > ctx.maxWaitMs) {
          const message = `the server asks to wait ${Math.ceil(waitMs / 60_000)} minutes before sending more (429); stopping instead`;
          return ended(stats, { kind: 'fatal', error: new DeliveryError(message, 429) });
        }
        ctx.pacer.pause(ctx.clock.now() + waitMs);
        ctx.notify({ type: 'rate-limited', seq, waitMs });
        continue;
      }
      case 'not-endpoint':
      case 'unknown': {
        stats.unknownOutcomes += 1;
        if (verdict.kind === 'not-endpoint' && ctx.answers.endpoint === 0) {
          // every answer so far was such a page: a front end, not the endpoint; trying again learns nothing
          stats.possiblyApplied = true;
          const message = `${ctx.endpoint} answered ${verdict.answer}; this does not look like the endpoint: check --url`;
          return ended(stats, { kind: 'fatal', error: new DeliveryError(message, verdict.status) });
        }
        const reason = verdict.kind === 'unknown' ? verdict.reason : `an answer that is not the endpoint's: ${verdict.answer}`;
        ctx.notify({ type: 'unknown-outcome', seq, action: ctx.onUnknown, reason });
        if (ctx.onUnknown === 'reject') {
          return ended(stats, { kind: 'unknown-rejected', message: `outcome unknown (${reason}); not sent again` });
        }
        stats.possiblyApplied = true;
        const gaveUp = await afterFailure(reason);
        if (gaveUp !== undefined) return gaveUp;
        continue;
      }
      case 'retry': {
        const gaveUp = await afterFailure(verdict.reason, Math.min(verdict.minDelayMs ?? 0, ctx.maxWaitMs));
        if (gaveUp !== undefined) return gaveUp;
        continue;
      }
    }
  }
}
