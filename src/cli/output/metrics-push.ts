// --metrics-push URL: the upload's counters pushed to a Prometheus Pushgateway while it runs (with
// each progress event) and once more at its end, from the summary. A consumer of the run's events;
// prom-client is imported only by a run that pushes.
import { hostname } from 'node:os';
import type { Counter, Gauge, Registry } from 'prom-client';
import { UsageError } from '../../errors.js';
import { shardTag, type Shard } from '../../upload/shard.js';
import { refusedOf } from '../../transport/summary.js';
import { asSummary, runFigures } from './figures.js';
import type { ProgressEvent, RunConsumer, RunEvent } from './run-events.js';

export const PUSH_JOB = 'track_upload';
const PUSH_TIMEOUT_MS = 10_000;
/** The push at the end, which the upload waits for before it exits. */
const LAST_PUSH_TIMEOUT_MS = 5_000;

/** Where the metrics are put, as it may be printed (no credentials), and the Basic credentials the URL held. */
export interface PushTarget {
  url: string;
  authorization?: string;
}

/**
 * Where the metrics are put: the URL as given when it names a group (`.../metrics/job/NAME/...`),
 * else `URL/metrics/job/track_upload/instance/HOST`; a shard's (--shard 2/4) with `/shard/2-of-4`
 * after the group unless it names a shard itself, since each push replaces its group's metrics and
 * shards on one machine (or under one named group) would each replace the others'. A user and password in the URL
 * (`http://user:pass@gateway:9091`, a gateway behind Basic authentication) are sent as an
 * Authorization header, never as part of the URL, and never printed.
 */
export function pushTarget(url: string, host = hostname(), shard?: Shard): PushTarget {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`--metrics-push: expected the Pushgateway's URL, such as http://127.0.0.1:9091, got "${url}"`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new UsageError(`--metrics-push: expected an http:// or https:// URL, got "${parsed.protocol}//${parsed.host}"`);
  const credentials = parsed.username === '' && parsed.password === '' ? undefined : `${decodeURIComponent(parsed.username)}:${decodeURIComponent(parsed.password)}`;
  parsed.username = '';
  parsed.password = '';
  const authorization = credentials === undefined ? undefined : `Basic ${Buffer.from(credentials).toString('base64')}`;
  const named = /\/metrics\/job\/[^/]+/.test(parsed.pathname);
  const base = parsed.href.replace(/\/+$/, '');
  const group = named ? base : `${base}/metrics/job/${PUSH_JOB}/instance/${encodeURIComponent(host)}`;
  // the labels of a grouping key come in pairs after the job's name: /job/J/shard/V names a shard
  const shardNamed = named && /\/metrics\/job\/[^/]+(\/[^/]+\/[^/]+)*\/shard\/[^/]+/.test(parsed.pathname);
  if (shard === undefined || shardNamed) return { url: named ? parsed.href : group, authorization };
  return { url: `${group}/shard/${shardTag(shard).slice('shard-'.length)}`, authorization };
}

/** The counters as the Pushgateway receives them. */
interface Figures {
  rows: number;
  rejectedRows: number;
  answers: Record<string, number>;
  retries: number;
  rateLimited: number;
  items: { accepted: number; rejected: number };
  dataPoints: number;
  durationSeconds: number;
  inFlight: number;
  running: boolean;
  exitStatus?: number;
}

const fromProgress = (p: ProgressEvent): Figures => ({
  rows: p.rows,
  rejectedRows: p.rejectedRows,
  answers: p.answers,
  retries: p.requests.retries,
  rateLimited: p.requests.rateLimited,
  items: { accepted: p.items.accepted, rejected: p.items.rejected },
  dataPoints: p.dataPoints,
  durationSeconds: p.elapsedSeconds,
  inFlight: p.requests.inFlight,
  running: true,
});

function fromSummary(json: Record<string, unknown>, exitStatus: number): Figures {
  const summary = asSummary(json);
  const figures = runFigures(summary);
  const d = summary.delivery as (typeof summary.delivery & { answers?: Record<string, number> }) | undefined;
  const items = Object.values(d?.items ?? {});
  return {
    rows: figures.rows,
    rejectedRows: summary.rejected,
    answers: d?.answers ?? {},
    retries: d?.retries ?? 0,
    rateLimited: d?.rateLimited ?? 0,
    items: { accepted: items.reduce((n, t) => n + t.accepted, 0), rejected: items.reduce((n, t) => n + refusedOf(t), 0) },
    dataPoints: figures.dataPoints,
    durationSeconds: figures.durationSeconds,
    inFlight: 0,
    running: false,
    exitStatus,
  };
}

type Client = typeof import('prom-client');

/** The registry and a function that lays figures into it. */
function metricsOf(client: Client): { registry: Registry; set: (f: Figures) => void } {
  const registry = new client.Registry();
  const counter = <L extends string = never>(name: string, help: string, labelNames: L[] = []): Counter<L> => new client.Counter<L>({ name, help, labelNames, registers: [registry] });
  const gauge = (name: string, help: string): Gauge => new client.Gauge({ name, help, registers: [registry] });
  const rows = counter('track_upload_rows_read_total', 'Rows read from the inputs.');
  const rejectedRows = counter('track_upload_rows_rejected_total', 'Rows refused before sending (written to the rejects file).');
  const requests = counter('track_upload_requests_total', 'Posts by the answer: the HTTP status, or failed when none came.', ['status']);
  const retries = counter('track_upload_retries_total', 'Posts made again after a 5xx, a network error or an unknown outcome.');
  const waits = counter('track_upload_rate_limit_waits_total', '429 answers, each of which paused all sending.');
  const items = counter('track_upload_items_total', 'Items the server answered for, by outcome.', ['outcome']);
  const points = counter('track_upload_data_points_total', 'Data points of the items the server accepted.');
  const duration = gauge('track_upload_duration_seconds', 'Seconds since the upload started (at its end: how long it took).');
  const inFlight = gauge('track_upload_requests_in_flight', 'Requests posting or waiting for a retry or for the pacer.');
  const running = gauge('track_upload_running', '1 while the upload runs, 0 once it has ended.');
  const exit = gauge('track_upload_exit_status', 'The exit status of the upload that ended (absent while it runs).');
  const setCounter = <L extends string>(c: Counter<L>, n: number, labels?: Partial<Record<L, string>>): void => {
    if (labels === undefined) {
      c.reset();
      c.inc(n);
    } else c.inc(labels, n);
  };
  return {
    registry,
    set(f) {
      setCounter(rows, f.rows);
      setCounter(rejectedRows, f.rejectedRows);
      requests.reset();
      for (const [status, n] of Object.entries(f.answers)) setCounter(requests, n, { status });
      setCounter(retries, f.retries);
      setCounter(waits, f.rateLimited);
      items.reset();
      setCounter(items, f.items.accepted, { outcome: 'accepted' });
      setCounter(items, f.items.rejected, { outcome: 'rejected' });
      setCounter(points, f.dataPoints);
      duration.set(f.durationSeconds);
      inFlight.set(f.inFlight);
      running.set(f.running ? 1 : 0);
      if (f.exitStatus !== undefined) exit.set(f.exitStatus);
    },
  };
}

/** How long a push may take: one of a progress event, and the last one, which the upload waits for. */
export interface PushTimes {
  progressMs: number;
  lastMs: number;
}

export function metricsPush(url: string, progressEvery: number, warn: (message: string) => void, shard?: Shard, times: PushTimes = { progressMs: PUSH_TIMEOUT_MS, lastMs: LAST_PUSH_TIMEOUT_MS }): RunConsumer {
  const target = pushTarget(url, hostname(), shard);
  let metrics: Promise<ReturnType<typeof metricsOf>> | undefined;
  /** The push of a progress event still under way; the end cuts it off. */
  let pushing: AbortController | undefined;
  let warned = false;

  const push = async (figures: Figures, cut: AbortSignal, timeoutMs: number): Promise<void> => {
    metrics ??= import('prom-client').then(metricsOf);
    const { registry, set } = await metrics;
    // cut off while prom-client loaded
    if (cut.aborted) return;
    set(figures);
    // the push's own time, on a timer this function holds: a signal of AbortSignal.timeout() given to
    // AbortSignal.any() can be collected before it fires (Node 20), and a hung gateway then held the
    // end of the run forever
    const stop = new AbortController();
    const timer = setTimeout(() => stop.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), timeoutMs);
    const cutOff = (): void => stop.abort(cut.reason);
    cut.addEventListener('abort', cutOff, { once: true });
    try {
      const response = await fetch(target.url, {
        method: 'PUT',
        headers: { 'content-type': registry.contentType, ...(target.authorization === undefined ? {} : { authorization: target.authorization }) },
        body: await registry.metrics(),
        signal: stop.signal,
      });
      if (!response.ok) throw new Error(`${response.status} ${(await response.text()).trim().slice(0, 200)}`);
    } catch (error) {
      // cut off by the end, whose push carries newer figures: no failure
      if (cut.aborted) return;
      // a gateway that cannot be reached never stops the upload; it is told once
      if (!warned) warn(`--metrics-push: could not push to ${target.url}: ${(error as Error).message}`);
      warned = true;
    } finally {
      clearTimeout(timer);
      cut.removeEventListener('abort', cutOff);
    }
  };

  let last: Promise<void> = Promise.resolve();
  return {
    progressEvery,
    event(event: RunEvent) {
      if (event.type === 'progress') {
        // a push still under way is not queued behind: the next progress event carries newer figures
        if (pushing !== undefined) return;
        const cut = new AbortController();
        pushing = cut;
        last = push(fromProgress(event), cut.signal, times.progressMs).finally(() => {
          if (pushing === cut) pushing = undefined;
        });
      } else if (event.type === 'end') {
        // a slow gateway holds the end of the upload at most LAST_PUSH_TIMEOUT_MS, not behind a push of older figures
        pushing?.abort();
        pushing = undefined;
        last = push(fromSummary(event.summary, event.exitStatus), new AbortController().signal, times.lastMs);
      }
    },
    close: () => last,
  };
}
