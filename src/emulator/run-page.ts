// The web view's run page (GET /_track/run): how a rehearsal went, at a glance. Requests per second
// against the rate limit, answers by status, items by kind and minor errors by type, since the start
// or the last reset, drawn here as SVG: the page runs no script.
import { barChart, grouped, largestBars, lineChart, statusColour, type Bar } from '../charts/svg.js';
import { ARRAY_NAMES } from '../model/index.js';
import type { RateLimitConfig } from './rate-limit.js';
import type { RunTally } from './run-tally.js';
import type { Store } from './store.js';
import { escapeHtml, layout, totalsOf } from './web-view.js';

/** Points on the time axis, at most: longer runs are drawn in steps of several seconds (their mean per second). */
const MAX_POINTS = 600;
/** Minor error types drawn; the rest are one bar. */
const TYPES_SHOWN = 12;
const KIND_COLOURS = { attributes: '#2f6fb0', events: '#0f766e', purchases: '#a16207' } as const;

const clock = (second: number): string => `${new Date(second * 1000).toISOString().slice(11, 19)}`;

/** Requests per second over the seconds the tally holds: all of them, and those answered 429. */
export function perSecondSeries(run: RunTally): { all: [number, number][]; limited: [number, number][] } {
  const seconds = [...run.perSecond.keys()];
  if (seconds.length === 0) return { all: [], limited: [] };
  const first = seconds[0];
  const last = seconds[seconds.length - 1];
  const step = Math.max(1, Math.ceil((last - first + 1) / MAX_POINTS));
  const all: [number, number][] = [];
  const limited: [number, number][] = [];
  for (let from = first; from <= last; from += step) {
    let n = 0;
    let refused = 0;
    for (let s = from; s < from + step; s += 1) {
      const counts = run.perSecond.get(s);
      if (counts === undefined) continue;
      for (const [status, count] of counts) {
        n += count;
        if (status === '429') refused += count;
      }
    }
    all.push([from, n / step]);
    limited.push([from, refused / step]);
  }
  return { all, limited };
}

/** The types with the most errors, and the rest together. */
function errorBars(run: RunTally): Bar[] {
  const bars = [...run.minorErrors].map(([label, value]) => ({ label, value, colour: '#d98e04' }));
  return largestBars(bars, TYPES_SHOWN, (n) => `(${grouped(n)} other types)`, '#b7791f');
}

export function runPage(store: Store, run: RunTally, rateLimit: RateLimitConfig): string {
  const { all, limited } = perSecondSeries(run);
  const perSecondLimit = rateLimit.requests / (rateLimit.windowMs / 1000);
  const windowText = rateLimit.windowMs % 1000 === 0 ? `${grouped(rateLimit.windowMs / 1000)} s` : `${grouped(rateLimit.windowMs)} ms`;
  const statuses = [...run.byStatus()].sort((a, b) => b[1] - a[1]);
  const rateLimited = statuses.find(([status]) => status === '429')?.[1] ?? 0;
  const errors = [...run.minorErrors.values()].reduce((sum, n) => sum + n, 0);
  const items = ARRAY_NAMES.reduce((sum, kind) => sum + run.items[kind], 0);
  const rps = lineChart({
    id: 'requests-per-second',
    title: 'Requests per second against the rate limit',
    series: [
      { name: 'requests/s', colour: '#2f6fb0', points: all },
      { name: 'answered 429/s', colour: '#c2410c', points: limited },
    ],
    limit: { value: perSecondLimit, label: `rate limit ${grouped(perSecondLimit)}/s (${grouped(rateLimit.requests)} per ${windowText})` },
    xLabel: 'time (UTC)',
    yLabel: 'requests per second',
    xText: clock,
  });
  const byStatus = barChart({
    id: 'statuses',
    title: 'Requests by status',
    bars: statuses.map(([status, value]) => ({ label: status, value, colour: statusColour(status) })),
    unit: ['request', 'requests'],
    empty: 'No requests yet.',
  });
  const byKind = barChart({
    id: 'items',
    title: 'Items processed by kind',
    bars: ARRAY_NAMES.map((kind) => ({ label: kind, value: run.items[kind], colour: KIND_COLOURS[kind] })),
    unit: ['item', 'items'],
    empty: 'No items yet.',
  });
  const byType = barChart({ id: 'minor-errors', title: 'Minor errors by type', bars: errorBars(run), unit: ['item', 'items'], empty: 'No minor errors.' });
  const figures =
    `<p class="count" id="run-figures"><strong>${grouped(run.total)}</strong> ${run.total === 1 ? 'request' : 'requests'}, ` +
    `<strong>${grouped(rateLimited)}</strong> answered 429, <strong>${grouped(items)}</strong> ${items === 1 ? 'item' : 'items'} processed, ` +
    `<strong>${grouped(errors)}</strong> minor ${errors === 1 ? 'error' : 'errors'}, since the emulator started or was last reset</p>`;
  const figure = (heading: string, chart: string): string => `<figure><h2>${escapeHtml(heading)}</h2>${chart}</figure>`;
  const main = `${figures}<div class="charts">${figure('Requests per second', rps)}${figure('Statuses', byStatus)}${figure('Items by kind', byKind)}${figure('Minor errors by type', byType)}</div>`;
  return layout('Run', 'run', totalsOf(store), main);
}
