// GET /metrics in the Prometheus text format, with prom-client: the tally's counts (requests by route
// and status, items by kind, minor errors by type, 429s), injected faults, how long requests took,
// and what the store holds. prom-client is imported once the server listens (or on the first
// scrape), not before: the emulator starts as fast as without it; a duration observed before it is
// loaded waits in a queue.
import type { Histogram, Registry } from 'prom-client';
import type { FaultCounts } from './handler.js';
import { routeLabel, type RunTally } from './run-tally.js';
import type { Store } from './store.js';

/** The content type of the Prometheus text format, version 0.0.4. */
export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Durations kept while prom-client loads, at most (then the oldest wait no more). */
const MAX_QUEUED = 100_000;

export interface MetricsSources {
  tally: RunTally;
  faults: FaultCounts;
  store: Store;
}

interface Loaded {
  registry: Registry;
  duration: Histogram<'route'>;
}

export class EmulatorMetrics {
  private loading: Promise<Loaded> | undefined;
  private loaded: Loaded | undefined;
  private queued: [string, number][] = [];

  constructor(private readonly sources: MetricsSources) {}

  /** Starts loading prom-client; the metrics are ready once it resolves. */
  load(): Promise<Loaded> {
    this.loading ??= import('prom-client').then((client) => {
      const loaded = build(client, this.sources);
      for (const [route, seconds] of this.queued) loaded.duration.observe({ route }, seconds);
      this.queued = [];
      this.loaded = loaded;
      return loaded;
    });
    return this.loading;
  }

  /** How long a request took, from its first byte to its answer written. */
  observe(path: string, seconds: number): void {
    const route = routeLabel(path);
    if (this.loaded !== undefined) this.loaded.duration.observe({ route }, seconds);
    else if (this.queued.length < MAX_QUEUED) this.queued.push([route, seconds]);
  }

  /** The exposition text. */
  async text(): Promise<string> {
    return (await this.load()).registry.metrics();
  }
}

type Client = typeof import('prom-client');

function build(client: Client, { tally, faults, store }: MetricsSources): Loaded {
  const registry = new client.Registry();
  const counter = <L extends string>(name: string, help: string, labelNames: L[], fill: (set: (labels: Partial<Record<L, string>>, n: number) => void) => void): void => {
    new client.Counter<L>({
      name,
      help,
      labelNames,
      registers: [registry],
      collect() {
        this.reset();
        fill((labels, n) => {
          this.inc(labels, n);
        });
      },
    });
  };
  counter('track_emulator_requests_total', 'Requests answered (or dropped), by route and status, as the request log records them.', ['route', 'status'], (set) => {
    for (const [key, n] of tally.requests) {
      const at = key.indexOf('\u0000');
      set({ route: key.slice(0, at), status: key.slice(at + 1) }, n);
    }
  });
  counter('track_emulator_items_processed_total', 'Items applied (the *_processed of the answers), by kind.', ['kind'], (set) => {
    for (const [kind, n] of Object.entries(tally.items)) set({ kind }, n);
  });
  counter('track_emulator_minor_errors_total', 'Items refused with a minor error, by type (without the value).', ['type'], (set) => {
    for (const [type, n] of tally.minorErrors) set({ type }, n);
  });
  counter('track_emulator_rate_limited_total', 'Requests answered 429 (the rate limit, or an injected fault).', [], (set) => {
    let n = 0;
    for (const [key, count] of tally.requests) if (key.endsWith('\u0000429')) n += count;
    set({}, n);
  });
  counter('track_emulator_faults_injected_total', 'Faults injected, by kind (--fail-rate, --drop-rate, --latency, X-Track-Fault).', ['kind'], (set) => {
    set({ kind: 'status' }, faults.status);
    set({ kind: 'drop' }, faults.drop);
    set({ kind: 'drop_after_commit' }, faults.dropAfterCommit);
    set({ kind: 'latency' }, faults.latency);
  });
  new client.Gauge<'kind'>({
    name: 'track_emulator_stored',
    help: 'What the database holds now: profiles, events and purchases (a purchase of quantity X counts as X).',
    labelNames: ['kind'],
    registers: [registry],
    collect() {
      const counts = store.counts();
      for (const [kind, n] of Object.entries(counts)) this.set({ kind }, n);
    },
  });
  const duration = new client.Histogram<'route'>({
    name: 'track_emulator_request_duration_seconds',
    help: 'From the first byte of a request to its answer written (an injected --latency included), by route.',
    labelNames: ['route'],
    buckets: DURATION_BUCKETS,
    registers: [registry],
  });
  return { registry, duration };
}
