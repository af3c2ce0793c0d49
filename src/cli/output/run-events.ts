// The events of one run (upload, validate) in one shape: what it set out to do, how far it has got,
// its waits, retries and stop, and its end with the summary --json prints. Every output that watches
// a run (NDJSON progress, the events file, the GitHub Actions summary, the HTML report, the metrics
// push) is a consumer of these events; none counts anything for itself. docs/progress-events.schema.json
// describes them.
import type { RejectRecord } from '../../model/request.js';
import type { DeliveryNotice, DeliveryProgress } from '../../transport/index.js';
import type { ReadProgress } from '../../upload/upload.js';
import { itemsSum } from '../../transport/summary.js';

export interface StartEvent {
  type: 'start';
  time: string;
  command: string;
  inputs: { file: string; bytes: number | null }[];
  /** Where requests go (scheme, host and port); absent in a dry run. */
  target?: string;
  limits: { maxTotal?: number; maxPerArray?: number; rate: number; hourly?: number; concurrency?: number; retries?: number };
}

export interface ProgressEvent {
  type: 'progress';
  time: string;
  elapsedSeconds: number;
  /** Rows read, and the input bytes read of the total (0 when unknown, as for standard input). */
  rows: number;
  bytes: number;
  totalBytes: number;
  /** Rows refused before sending (the plan's rejects). */
  rejectedRows: number;
  requests: { planned: number; sent: number; settled: number; inFlight: number; attempts: number; retries: number; rateLimited: number };
  /** HTTP answers by status (`201`, `429`, ...), and `failed` for posts that got none. */
  answers: Record<string, number>;
  items: { sent: number; accepted: number; rejected: number };
  /** Data points of the items the server accepted (a dry run: of the items planned). */
  dataPoints: number;
  /** Requests answered per second since the start. */
  requestsPerSecond: number;
  /** Seconds left, estimated from the bytes read and the requests settled; null when it cannot be told. */
  etaSeconds: number | null;
  /** All sending is held until then (a 429, the rate-limit headers). */
  heldUntil?: string;
}

export type WaitReason = 'rate-limited' | 'rate' | 'hourly' | 'retry-after' | 'server-window';

export interface WaitEvent {
  type: 'wait';
  time: string;
  /** `rate-limited`: a 429 answer paused all sending; the others: a wait of more than 5 s for the --rate or --hourly cap, the server's Retry-After or its rate-limit window. */
  reason: WaitReason;
  until: string;
  seconds: number;
  /** The request the 429 answered (its number in the plan). */
  request?: number;
}

export interface RetryEvent {
  type: 'retry';
  time: string;
  request: number;
  /** The try that will be made (2 for the first retry). */
  attempt: number;
  reason: string;
  delaySeconds: number;
}

export interface UnknownOutcomeEvent {
  type: 'unknown-outcome';
  time: string;
  request: number;
  /** What is done about it: sent again, or its rows rejected unsent (--on-unknown). */
  action: 'retry' | 'reject';
  reason: string;
}

export interface StopEvent {
  type: 'stop';
  time: string;
  signal: string;
  /** `finish`: reading stops and requests in flight finish; `abort`: they are cut off at once. */
  action: 'finish' | 'abort';
}

export interface WarningEvent {
  type: 'warning';
  time: string;
  message: string;
}

export interface EndEvent {
  type: 'end';
  time: string;
  exitStatus: number;
  /** Exactly what --json prints. */
  summary: Record<string, unknown>;
}

/** The run ended on an error before it had a summary (a usage error found before reading). */
export interface ErrorEvent {
  type: 'error';
  time: string;
  exitStatus: number;
  error: { name: string; message: string };
}

export type RunEvent = StartEvent | ProgressEvent | WaitEvent | RetryEvent | UnknownOutcomeEvent | StopEvent | WarningEvent | EndEvent | ErrorEvent;

/** One output that watches a run. */
export interface RunConsumer {
  /** Seconds between the progress events it is given; none when absent. */
  progressEvery?: number;
  event(event: RunEvent): void;
  /** Each rejected row as it is written to the rejects file. */
  reject?(record: RejectRecord): void;
  /** Awaited once the run is over (after `end` or `error`): files written, the last push made. */
  close?(): Promise<void>;
}

/** What runAndReport tells the outputs once the run is over. */
export interface RunEnding {
  /** NDJSON progress: an error is told as an event, not as a line of text on stderr. */
  readonly errorsAsEvents: boolean;
  end(summary: Record<string, unknown>, exitStatus: number): Promise<void>;
  failed(error: Error, exitStatus: number): Promise<void>;
}

export interface RunEvents extends RunEnding {
  start(event: Omit<StartEvent, 'type' | 'time'>): void;
  /** The hooks of upload(): reading, delivery progress, notices, rejects. */
  read(progress: ReadProgress): void;
  delivery(progress: DeliveryProgress): void;
  notice(notice: DeliveryNotice): void;
  reject(record: RejectRecord): void;
  stop(signal: string, action: StopEvent['action']): void;
  warn(message: string): void;
  /** The progress as of now. */
  progress(): ProgressEvent;
}

const iso = (ms: number): string => new Date(ms).toISOString();
const seconds = (ms: number): number => Math.round(ms / 100) / 10;

/** The event of an error that ended the run before its summary. */
export const errorEvent = (error: Error, exitStatus: number, at: number = Date.now()): ErrorEvent => ({
  type: 'error',
  time: iso(at),
  exitStatus,
  error: { name: error.name, message: error.message },
});

/** Runs both hooks (either may be absent); undefined when neither is given. */
export function both<T>(a: ((value: T) => void) | undefined, b: ((value: T) => void) | undefined): ((value: T) => void) | undefined {
  if (a === undefined || b === undefined) return a ?? b;
  return (value) => {
    a(value);
    b(value);
  };
}

/** The estimate of the seconds left: by the bytes still to read, then by the requests still to settle. */
function etaSeconds(read: { bytes: number; requests: number }, totalBytes: number, d: DeliveryProgress | undefined, elapsedMs: number): number | null {
  if (elapsedMs <= 0) return null;
  const readShare = totalBytes > 0 ? Math.min(1, read.bytes / totalBytes) : undefined;
  if (d === undefined) {
    if (readShare === undefined || readShare === 0) return null;
    return seconds((elapsedMs * (1 - readShare)) / readShare);
  }
  if (d.requestsSettled === 0 || readShare === undefined || readShare === 0) return null;
  const expected = read.requests / readShare;
  const left = Math.max(0, expected - d.requestsSettled - d.requestsAbandoned);
  return seconds((left * elapsedMs) / d.requestsSettled);
}

export interface RunEventsOptions {
  /** Input bytes in all (0 when unknown): the estimate of the time left reads it. */
  totalBytes: number;
  /** Errors are told as events only (NDJSON progress on stderr). */
  errorsAsEvents?: boolean;
  /** The wall clock (a test's own). */
  now?: () => number;
}

/** The events of a run, given to each consumer in the order they are listed, and closed in the reverse order. */
export function createRunEvents(consumers: RunConsumer[], options: RunEventsOptions): RunEvents {
  const { totalBytes } = options;
  const now = options.now ?? Date.now;
  const startedAt = now();
  const read = { rows: 0, requests: 0, bytes: 0, rejected: 0, dataPoints: 0 };
  let delivery: DeliveryProgress | undefined;
  const timers: ReturnType<typeof setInterval>[] = [];
  let over = false;

  const emit = (event: RunEvent): void => {
    for (const consumer of consumers) consumer.event(event);
  };
  const time = (): string => iso(now());

  const progress = (): ProgressEvent => {
    const at = now();
    const elapsed = at - startedAt;
    const d = delivery;
    const sum = (figure: 'sent' | 'accepted' | 'refused'): number => (d === undefined ? 0 : itemsSum(d.items, figure));
    const heldFor = d?.heldForMs ?? 0;
    return {
      type: 'progress',
      time: iso(at),
      elapsedSeconds: seconds(elapsed),
      rows: read.rows,
      bytes: read.bytes,
      totalBytes,
      rejectedRows: read.rejected,
      requests: {
        // the plan's count lags its last requests until the next chunk is read; the deliverer has taken them
        planned: Math.max(read.requests, d?.requestsPulled ?? 0),
        sent: d?.requestsSent ?? 0,
        settled: d?.requestsSettled ?? 0,
        inFlight: d?.inFlight ?? 0,
        attempts: d?.attempts ?? 0,
        retries: d?.retries ?? 0,
        rateLimited: d?.rateLimited ?? 0,
      },
      answers: { ...(d?.answers ?? {}) },
      items: { sent: sum('sent'), accepted: sum('accepted'), rejected: sum('refused') },
      dataPoints: d === undefined ? read.dataPoints : d.dataPoints,
      requestsPerSecond: d === undefined || elapsed <= 0 ? 0 : Math.round((d.requestsSent * 10_000) / elapsed) / 10,
      etaSeconds: etaSeconds(read, totalBytes, d, elapsed),
      ...(heldFor > 0 ? { heldUntil: iso(at + heldFor) } : {}),
    };
  };

  const finish = async (last: EndEvent | ErrorEvent): Promise<void> => {
    if (over) return;
    over = true;
    for (const timer of timers) clearInterval(timer);
    // the last progress before the end: a consumer drawing the run has its final figures
    if (last.type === 'end') {
      const final = progress();
      for (const consumer of consumers) if (consumer.progressEvery !== undefined) consumer.event(final);
    }
    emit(last);
    // the last listed first: the event lines (listed first) are still open for the warnings of the others' closing
    for (const consumer of [...consumers].reverse()) {
      try {
        await consumer.close?.();
      } catch (error) {
        // an output that cannot be written (a full disk) is told; the run's own outcome stands
        emit({ type: 'warning', time: time(), message: (error as Error).message });
      }
    }
  };

  const events: RunEvents = {
    errorsAsEvents: options.errorsAsEvents === true,
    start(start) {
      emit({ type: 'start', time: iso(startedAt), ...start });
      // consumers of one interval are given the same progress event (--progress ndjson and --events write the same lines)
      const byInterval = new Map<number, RunConsumer[]>();
      for (const consumer of consumers) {
        const every = consumer.progressEvery;
        if (every !== undefined) byInterval.set(every, [...(byInterval.get(every) ?? []), consumer]);
      }
      for (const [every, group] of byInterval) {
        const timer = setInterval(() => {
          const event = progress();
          for (const consumer of group) consumer.event(event);
        }, every * 1000);
        timer.unref();
        timers.push(timer);
      }
    },
    read(p) {
      read.rows = p.rows;
      read.requests = p.requests;
      read.bytes += p.bytes;
      read.rejected = p.rejected ?? read.rejected;
      read.dataPoints = p.dataPoints ?? read.dataPoints;
    },
    delivery(p) {
      delivery = p;
    },
    notice(n) {
      const at = now();
      switch (n.type) {
        case 'rate-limited':
          return emit({ type: 'wait', time: iso(at), reason: 'rate-limited', until: iso(at + n.waitMs), seconds: seconds(n.waitMs), request: n.seq });
        case 'waiting':
          return emit({ type: 'wait', time: iso(at), reason: n.reason, until: iso(n.untilWallMs), seconds: seconds(Math.max(0, n.untilWallMs - at)) });
        case 'retry':
          return emit({ type: 'retry', time: iso(at), request: n.seq, attempt: n.failure + 1, reason: n.reason, delaySeconds: seconds(n.delayMs) });
        case 'unknown-outcome':
          return emit({ type: 'unknown-outcome', time: iso(at), request: n.seq, action: n.action, reason: n.reason });
        case 'warning':
          return emit({ type: 'warning', time: iso(at), message: n.message });
      }
    },
    reject(record) {
      for (const consumer of consumers) consumer.reject?.(record);
    },
    stop(signal, action) {
      emit({ type: 'stop', time: time(), signal, action });
    },
    warn(message) {
      emit({ type: 'warning', time: time(), message });
    },
    progress,
    end: (summary, exitStatus) => finish({ type: 'end', time: time(), exitStatus, summary }),
    failed: (error, exitStatus) => finish(errorEvent(error, exitStatus, now())),
  };
  return events;
}
