// What a caller gives deliver(): the client, the pace and retries, the journal and the hooks that
// record a request before it is posted and settle it after, and the signals that stop it.
import type { RejectRecord } from '../model/request.js';
import type { BackoffPolicy } from './backoff.js';
import type { Clock } from './clock.js';
import type { TrackClient } from './http-client.js';
import type { Pacer } from './pacer.js';
import type { RequestToSend } from './request.js';
import type { DeliveryNotice, OnUnknown } from './send-request.js';
import type { DeliveryProgress } from './summary.js';

export interface DeliverOptions {
  client: Pick<TrackClient, 'post' | 'endpoint'>;
  /** Requests in flight at once (posting, backing off or waiting on the pacer). */
  concurrency?: number;
  /** Most requests started in any one-second window; undefined for no cap. */
  rate?: number;
  /** Most requests started in any hour; undefined for no cap. */
  hourly?: number;
  /** Tries after the first for 5xx, network errors and unknown outcomes. */
  retries?: number;
  backoff?: BackoffPolicy;
  /** 429 answers one request may take before the run stops. */
  maxRateLimitWaits?: number;
  /** The longest wait a 429 may ask for before the run stops instead; default 61 minutes. */
  maxWaitMs?: number;
  /** A request that may have been applied: send it again (default), or reject its items unsent. */
  onUnknown?: OnUnknown;
  /** Where settled rows are recorded (see openJournal). */
  journal?: {
    record(request: RequestToSend): void;
    flush(): Promise<void>;
  };
  /** Awaited before a request is first posted (the journal records its rows as sent); a failure stops the run, the request unsent. */
  beforeFirstPost?: (request: RequestToSend) => Promise<void>;
  /**
   * Rows of a request that an earlier run may have delivered already: counted as possibly duplicated
   * when it is posted. Each is added to `into` as `file\u0000line` (a row already there is not
   * counted again: one split over several requests is one), and how many were added is returned.
   */
  inDoubtRows?: (request: RequestToSend, into: Set<string>) => number;
  /** A request recorded as sent (beforeFirstPost) that certainly was not applied: it never left, or was refused unapplied. */
  notApplied?: (request: RequestToSend) => void;
  /** Told before a request is posted again after an outcome that could not be known, with the rows that may be doubled. */
  sentAgain?: (rows: number) => void;
  /** Rows earlier runs sent again and never reported (killed first): counted in this run's possibly duplicated. */
  carriedDuplicates?: number;
  /**
   * Told of a request the server accepted, with the items (by place in the body) its minor errors
   * refused (the delta state learns what was accepted). When it gives a promise, the request's rows
   * are journaled once it settles, and only when it fulfils: a row the journal holds as settled is
   * one the state knows (a stop in between leaves it in doubt, to be counted if sent again).
   */
  onAccepted?: (request: RequestToSend, rejected: ReadonlySet<number>) => Promise<void> | undefined;
  /**
   * Told of a request recorded as sent whose outcome stays unknown (it may have been applied, and
   * is not known to be): the delta state holds what it set in doubt. A promise is waited for as
   * onAccepted's is, before the request's rows are journaled as settled.
   */
  onInDoubt?: (request: RequestToSend) => Promise<void> | undefined;
  /**
   * Receives each rejected item; awaited before its rows are journaled. One that throws (a full
   * rejects file) stops the run once the request's rejects were all offered, and the request is
   * journaled all the same: the journal's beforeSettling must then carry what was not written.
   */
  onReject?: (record: RejectRecord) => void | Promise<void>;
  /** Called after each request settles or is given up. */
  onProgress?: (progress: DeliveryProgress) => void;
  /** 429 pauses, retries and unknown outcomes as they happen. */
  onNotice?: (notice: DeliveryNotice) => void;
  /** Graceful stop: take no more requests, start no new attempts, let posts on the wire finish. */
  stopSignal?: AbortSignal;
  /** Hard stop: cut off posts on the wire too. */
  abortSignal?: AbortSignal;
  /**
   * Told once when the delivery takes no more requests before the end of `requests` (a stop, an
   * abort, a fatal error): their producer should end, as a pull may be under way, and an async
   * generator's return() waits for it.
   */
  onStop?: () => void;
  clock?: Clock;
  random?: () => number;
  /** Replaces the pacer built from rate and hourly. */
  pacer?: Pacer;
  windowMarginMs?: number;
}
