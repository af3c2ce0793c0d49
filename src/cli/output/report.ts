// --report FILE.html: one self-contained page of a run (no script, nothing from elsewhere), written
// when it ends: its figures, throughput over time against --rate, waits, retries, answers, rejects by
// reason, and data points spent and avoided. A consumer of the run's events: the figures are the
// summary's, the curves its progress events, the waits and retries its wait and retry events.
import { writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { givenFileDescriptor } from '../../file-folder.js';
import { barChart, escapeXml as escape, grouped, largestBars, lineChart, statusColour, type Bar } from '../../charts/svg.js';
import { asSummary, runFigures, type SummaryFields } from './figures.js';
import type { ProgressEvent, RunConsumer, RunEvent, StartEvent, StopEvent } from './run-events.js';

/** Seconds between the samples the curves are drawn from. */
const SAMPLE_SECONDS = 1;
/** Samples kept: past this, every other one is dropped (a long run is drawn coarser, never out of memory). */
const MAX_SAMPLES = 2_000;
/** Bars of reasons drawn; the rest are one bar (the charts stay side by side in the first screen). */
const BARS_SHOWN = 8;
/** Retry reasons kept apart (a server's message may differ on every answer); past this, the rest together. */
const MAX_RETRY_REASONS = 100;
const OTHER_RETRY_REASONS = '(other reasons)';

const STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d232a;background:#f6f7f9}
header{background:#20303f;color:#fff;padding:10px 20px}header h1{font-size:17px;margin:0}header p{margin:2px 0 0;color:#cfd8e0}
main{padding:12px 20px;max-width:1240px}
table.figures{border-collapse:collapse;background:#fff;margin:0 0 10px}
table.figures th,table.figures td{border:1px solid #d9dee3;padding:3px 10px;text-align:left}table.figures th{background:#eef1f4;font-weight:600}
table.figures td{font-variant-numeric:tabular-nums}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(380px,1fr));gap:4px 14px}
figure{margin:0}figure h2{font-size:14px;margin:4px 0 2px}
svg.chart{display:block;width:100%;height:auto;background:#fff;border:1px solid #d9dee3}
.note{color:#59636e}
`;

interface Recorded {
  start?: StartEvent;
  samples: ProgressEvent[];
  waits: Map<string, { count: number; seconds: number }>;
  retries: Map<string, number>;
  stop?: StopEvent;
}

const WAIT_NAMES: Record<string, string> = {
  'rate-limited': '429 answers',
  rate: 'the --rate limit',
  hourly: 'the --hourly limit',
  'retry-after': "the server's Retry-After",
  'server-window': "the server's rate-limit window",
};

/** Points per second between successive samples of a count. */
export function perSecond(samples: ProgressEvent[], count: (p: ProgressEvent) => number): [number, number][] {
  const points: [number, number][] = [];
  // from the start, when every count was 0
  let before = { at: 0, n: 0 };
  for (const sample of samples) {
    const dt = sample.elapsedSeconds - before.at;
    if (dt <= 0) continue;
    points.push([sample.elapsedSeconds, Math.max(0, count(sample) - before.n) / dt]);
    before = { at: sample.elapsedSeconds, n: count(sample) };
  }
  return points;
}

const figureRow = (name: string, value: string, id: string): string => `<tr><th scope="row">${escape(name)}</th><td id="${id}">${value}</td></tr>`;

function figuresTable(summary: SummaryFields, exitStatus: number): string {
  const f = runFigures(summary);
  const d = summary.delivery;
  // a run that stopped short says what it left, what stopped it, and how to go on
  const accepted = d === undefined ? undefined : Object.values(d.items).reduce((sum, t) => sum + t.accepted, 0);
  const unsettled = summary.rowsUnsettled ?? 0;
  const resume = summary.journalPath !== undefined && (unsettled > 0 || summary.readToEnd === false) ? ': run again with --resume to send them' : '';
  const unread = summary.readToEnd === false ? ', and the rest of the input not read yet' : '';
  const fatal = d?.fatal ?? summary.fatal;
  return `<table class="figures"><tbody>
${figureRow('rows read', grouped(f.rows), 'figure-rows')}
${accepted === undefined ? '' : figureRow('items accepted', grouped(accepted), 'figure-accepted')}
${figureRow('rejected', grouped(f.rejected), 'figure-rejected')}
${unsettled === 0 && unread === '' ? '' : figureRow('rows unsettled', `${grouped(unsettled)}${escape(unread)}${escape(resume)}`, 'figure-unsettled')}
${fatal === undefined ? '' : figureRow('stopped by', escape(fatal.message), 'figure-fatal')}
${figureRow(d === undefined ? 'requests (would be sent)' : 'requests answered', grouped(f.requests), 'figure-requests')}
${d === undefined ? '' : figureRow('retries, 429 answers', `${grouped(d.retries)}, ${grouped(d.rateLimited)}`, 'figure-retries')}
${figureRow('data points spent, avoided', `${grouped(f.dataPoints)}, ${grouped(f.avoidedDataPoints)}`, 'figure-data-points')}
${figureRow('duration', `${grouped(f.durationSeconds)} s`, 'figure-duration')}
${figureRow('exit status', String(exitStatus), 'figure-exit-status')}
</tbody></table>`;
}

function charts(r: Recorded, summary: SummaryFields): string {
  const f = runFigures(summary);
  const rate = r.start?.limits.rate;
  const throughput = lineChart({
    id: 'throughput',
    title: 'Throughput over time',
    series: [
      { name: 'requests answered/s', colour: '#2f6fb0', points: perSecond(r.samples, (p) => p.requests.sent) },
      { name: '429 answers/s', colour: '#c2410c', points: perSecond(r.samples, (p) => p.requests.rateLimited) },
    ],
    limit: rate === undefined ? undefined : { value: rate, label: `--rate ${grouped(rate)}/s` },
    xLabel: 'seconds since the start',
    yLabel: 'per second',
    height: 230,
  });
  const answers = Object.entries((summary.delivery as { answers?: Record<string, number> } | undefined)?.answers ?? {}).sort((a, b) => b[1] - a[1]);
  const waits: Bar[] = [...r.waits].map(([reason, w]) => ({ label: `${WAIT_NAMES[reason] ?? reason} (${grouped(w.count)})`, value: w.seconds, colour: '#c2410c' }));
  const retries = largestBars(
    [...r.retries].map(([reason, n]) => ({ label: reason, value: n, colour: '#7c3aed' })),
    BARS_SHOWN,
    (n) => `(${grouped(n)} other reasons)`,
  );
  const rejects = largestBars(
    f.reasons.map((x) => ({ label: x.reason, value: x.rows, note: x.where, colour: x.where === 'by the server' ? '#a1161b' : '#d98e04' })),
    BARS_SHOWN,
    (n) => `(${grouped(n)} other reasons)`,
  );
  const points: Bar[] = [
    { label: summary.delivery === undefined ? 'would be spent' : 'spent', value: f.dataPoints, colour: '#2f6fb0' },
    { label: 'avoided (unchanged)', value: f.avoidedDataPoints, colour: '#17692d' },
  ];
  const figure = (heading: string, chart: string): string => `<figure><h2>${escape(heading)}</h2>${chart}</figure>`;
  return `<div class="charts">
${figure('Throughput', throughput)}
${figure('Answers by status', barChart({ id: 'answers', title: 'Answers by status', bars: answers.map(([label, value]) => ({ label, value, colour: statusColour(label) })), unit: ['post', 'posts'], empty: 'No request was posted.' }))}
${figure('Rejects by reason', barChart({ id: 'rejects', title: 'Rejects by reason', bars: rejects, unit: ['row', 'rows'], empty: 'No row was rejected.' }))}
${figure('Data points', barChart({ id: 'data-points', title: 'Data points spent and avoided', bars: points, empty: '' }))}
${figure('Waits', barChart({ id: 'waits', title: 'Seconds each wait asked for, added up by reason (how many waits)', bars: waits, unit: ['s', 's'], empty: 'No wait.' }))}
${figure('Retries', barChart({ id: 'retries', title: 'Retries by reason', bars: retries, unit: ['retry', 'retries'], empty: 'No retry.' }))}
</div>`;
}

export function reportPage(r: Recorded, end: { summary: Record<string, unknown>; exitStatus: number } | { error: string; exitStatus: number }): string {
  const command = r.start?.command ?? 'upload';
  const when = r.start === undefined ? '' : `started ${r.start.time.replace('T', ' ').slice(0, 19)} UTC`;
  const to = r.start?.target === undefined ? '' : ` to ${r.start.target}`;
  const inputs = r.start?.inputs.map((i) => i.file).join(', ') ?? '';
  const interrupted = 'summary' in end && asSummary(end.summary).interrupted;
  const stopped = r.stop !== undefined ? `<p class="note">Stopped by ${escape(r.stop.signal)}.</p>` : interrupted ? '<p class="note">Interrupted by a signal.</p>' : '';
  const main =
    'error' in end
      ? `<p class="note">The run ended before it had a summary: ${escape(end.error)} (exit status ${end.exitStatus}).</p>`
      : `${figuresTable(asSummary(end.summary), end.exitStatus)}${stopped}${charts(r, asSummary(end.summary))}`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>track ${escape(command)} report</title><style>${STYLE}</style></head>
<body><header><h1>track ${escape(command)}${escape(to)}</h1><p>${escape(inputs)}${inputs === '' ? '' : ' · '}${escape(when)}</p></header>
<main>${main}</main></body></html>
`;
}

export function htmlReport(path: string): RunConsumer {
  const recorded: Recorded = { samples: [], waits: new Map(), retries: new Map() };
  let page: string | undefined;
  const sample = (p: ProgressEvent): void => {
    recorded.samples.push(p);
    if (recorded.samples.length > MAX_SAMPLES) recorded.samples = recorded.samples.filter((_, i) => i % 2 === 0);
  };
  return {
    progressEvery: SAMPLE_SECONDS,
    event(event: RunEvent) {
      switch (event.type) {
        case 'start':
          recorded.start = event;
          break;
        case 'progress':
          sample(event);
          break;
        case 'wait': {
          const w = recorded.waits.get(event.reason) ?? { count: 0, seconds: 0 };
          recorded.waits.set(event.reason, { count: w.count + 1, seconds: Math.round((w.seconds + event.seconds) * 10) / 10 });
          break;
        }
        case 'retry': {
          const reason = recorded.retries.has(event.reason) || recorded.retries.size < MAX_RETRY_REASONS ? event.reason : OTHER_RETRY_REASONS;
          recorded.retries.set(reason, (recorded.retries.get(reason) ?? 0) + 1);
          break;
        }
        case 'stop':
          recorded.stop ??= event;
          break;
        case 'end':
          page = reportPage(recorded, { summary: event.summary, exitStatus: event.exitStatus });
          break;
        case 'error':
          page = reportPage(recorded, { error: event.error.message, exitStatus: event.exitStatus });
          break;
      }
    },
    close: async () => {
      // the system's message names no file: the warning it becomes says which
      if (page === undefined) return;
      // a descriptor the shell gave on a file (/dev/stdout > log) is written through: opened anew, the
      // file would be emptied of the run's other lines
      const given = givenFileDescriptor(path);
      try {
        if (given === undefined) await writeFile(path, page);
        else writeFileSync(given, page);
      } catch (error) {
        throw new Error(`--report ${path}: cannot be written (${(error as Error).message})`);
      }
    },
  };
}
