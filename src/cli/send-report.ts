// Runs `track upload` over the network: signals, progress, the summary and the exit status.
import chalk from 'chalk';
import { stat } from 'node:fs/promises';
import { send, type SendOptions } from '../send.js';
import type { DeliveryNotice, DeliveryProgress, DeliverySummary } from '../transport/index.js';
import { LONG_WAIT_MS, type WaitReason } from '../transport/pacer.js';
import type { UploadSummary } from '../upload.js';
import { fatalExit, formatSummary, reportFatal, summaryJson } from './commands/plan-report.js';
import type { UploadFlags } from './commands/upload.js';
import { EXIT } from './run.js';

const number = (n: number): string => Math.round(n).toLocaleString('en-US');

function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s}s` : s < 3600 ? `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s` : `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

const clockTime = (epochMs: number): string => `${new Date(epochMs).toISOString().slice(11, 19)} UTC`;

const WAIT_REASONS: Record<WaitReason, string> = {
  hourly: 'the hourly limit',
  'retry-after': "the server's Retry-After (429)",
  'server-window': "the server's rate-limit window",
  rate: 'the --rate limit',
};

/** A notice worth a line on stderr: long waits always; with no spinner, also each 429 pause (once per pause). */
function noticeLine(notice: DeliveryNotice, spinner: boolean, hourly: number | undefined, last: { pauseEnds: number }): string | undefined {
  switch (notice.type) {
    case 'waiting': {
      const why = notice.reason === 'hourly' && hourly !== undefined ? `the hourly limit (--hourly ${hourly})` : WAIT_REASONS[notice.reason];
      return `waiting for ${why} until ${clockTime(notice.untilWallMs)}`;
    }
    case 'retry':
      return notice.delayMs > LONG_WAIT_MS ? `${notice.reason}: trying again at ${clockTime(Date.now() + notice.delayMs)}` : undefined;
    case 'rate-limited': {
      // every request in flight may get its 429 for the same pause
      const ends = Date.now() + notice.waitMs;
      // a long pause is told as a wait, with when it ends
      if (spinner || notice.waitMs > LONG_WAIT_MS || Math.abs(ends - last.pauseEnds) < 1_000) return undefined;
      last.pauseEnds = ends;
      return `rate limited: all sending paused for ${duration(notice.waitMs)}`;
    }
    default:
      return undefined;
  }
}

interface Meter {
  /** Epoch ms until which all sending waits (a long wait told by the deliverer). */
  waitingUntil?: number;
  rows: number;
  bytes: number;
  totalBytes: number;
  delivery?: DeliveryProgress;
  startedAt: number;
}

function progressLine(m: Meter): string {
  const d = m.delivery;
  const sum = (k: 'sent' | 'accepted' | 'rejected'): number =>
    d === undefined ? 0 : d.items.attributes[k] + d.items.events[k] + d.items.purchases[k];
  const elapsed = Date.now() - m.startedAt;
  const rate = d === undefined || elapsed === 0 ? 0 : (d.requestsSent * 1000) / elapsed;
  const parts = [`rows read ${number(m.rows)}`, `sent ${number(sum('sent'))}`, `accepted ${number(sum('accepted'))}`, `rejected ${number(sum('rejected'))}`, `${rate.toFixed(1)} req/s`];
  if (m.waitingUntil !== undefined && m.waitingUntil > Date.now()) parts.push(`waiting until ${clockTime(m.waitingUntil)}`);
  else if (m.totalBytes > 0 && m.bytes > 0 && m.bytes < m.totalBytes) {
    parts.push(`ETA ${duration((elapsed * (m.totalBytes - m.bytes)) / m.bytes)}`);
  }
  if (d !== undefined && d.heldForMs > 0) parts.push(`held ${duration(d.heldForMs)} by the rate limit`);
  return parts.join(', ');
}

function deliveryLines(d: DeliverySummary, elapsedMs: number): string[] {
  const lines: string[] = [];
  for (const kind of ['attributes', 'events', 'purchases'] as const) {
    const t = d.items[kind];
    if (t.sent + t.rejected > 0) lines.push(`${kind.padEnd(11)} sent ${number(t.sent)}, accepted ${number(t.accepted)}, rejected ${number(t.rejected)}`);
  }
  const accepted = d.items.attributes.accepted + d.items.events.accepted + d.items.purchases.accepted;
  lines.push(`requests    ${number(d.requestsSent)} sent, ${number(d.retries)} retries, ${number(d.rateLimited)} rate-limited (429)`);
  if (d.requestsNotDelivered > 0) {
    lines.push(chalk.yellow(`not sent    ${number(d.requestsNotDelivered)} requests got no answer from the server:`));
    for (const [reason, n] of Object.entries(d.notDelivered).sort((a, b) => b[1] - a[1])) lines.push(chalk.yellow(`              ${number(n)}  ${reason}`));
  }
  if (d.unknownOutcomes > 0) {
    lines.push(chalk.yellow(`unknown     ${number(d.unknownOutcomes)} requests broke off after sending (${number(d.rowsInUnknownRequests)} rows); ${number(d.rowsPossiblyDuplicated)} rows possibly duplicated`));
  }
  if (d.rowsPossiblyDuplicated > 0 && d.unknownOutcomes === 0) {
    lines.push(chalk.yellow(`resent      ${number(d.rowsPossiblyDuplicated)} rows possibly duplicated: the run before stopped while they were in flight`));
  }
  if (d.requestsAbandoned > 0) lines.push(chalk.yellow(`unsettled   ${number(d.requestsAbandoned)} requests: run again with --resume to send them`));
  lines.push(`elapsed     ${duration(elapsedMs)}, ${number((accepted * 1000) / Math.max(1, elapsedMs))} rows/s accepted`);
  for (const warning of d.warnings) lines.push(chalk.yellow(`warning     ${warning}`));
  if (d.fatal !== undefined) lines.push(chalk.red(`stopped     ${d.fatal.message}`));
  return lines;
}

function exitCode(summary: UploadSummary<DeliverySummary>): number {
  const d = summary.delivery;
  const fatal = d?.fatal ?? summary.fatal;
  // 2 only when nothing reached the server: a stop after sending is a fatal stop, whatever its cause
  if (fatal !== undefined) return fatalExit(fatal, (d?.attempts ?? 0) > 0);
  if (d?.stopped === true || d?.aborted === true) return EXIT.interrupted;
  const rejected = summary.rejected + (d === undefined ? 0 : d.items.attributes.rejected + d.items.events.rejected + d.items.purchases.rejected);
  return rejected > 0 ? EXIT.rejected : EXIT.ok;
}

export async function runSendCommand(options: Omit<SendOptions, 'stdin'>, flags: UploadFlags): Promise<void> {
  const stop = new AbortController();
  const abort = new AbortController();
  let signals = 0;
  const onSignal = (): void => {
    signals += 1;
    if (signals === 1) {
      process.stderr.write('\nstopping: letting requests in flight finish and saving the journal (Ctrl-C again to abort at once)\n');
      stop.abort();
    } else {
      abort.abort();
      // the journal is append-only and tolerates a torn last line; give the abort a moment, then go
      setTimeout(() => process.exit(EXIT.interrupted), 2000).unref();
    }
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  const tty = process.stderr.isTTY === true;
  const quiet = flags.quiet === true;
  let totalBytes = 0;
  for (const file of options.inputs) totalBytes += await stat(file).then((s) => s.size).catch(() => 0);
  const meter: Meter = { rows: 0, bytes: 0, totalBytes, startedAt: Date.now() };
  const lastPause = { pauseEnds: 0 };
  const spinner = !quiet && tty ? (await import('ora')).default({ stream: process.stderr, text: 'starting', discardStdin: false }).start() : undefined;
  const ticker = quiet ? undefined : setInterval(() => {
    if (spinner !== undefined) spinner.text = progressLine(meter);
    else process.stderr.write(`${new Date().toISOString()} ${progressLine(meter)}\n`);
  }, spinner !== undefined ? 200 : 5000);

  let summary: UploadSummary<DeliverySummary>;
  try {
    summary = await send({
      ...options,
      stdin: process.stdin,
      stopSignal: stop.signal,
      abortSignal: abort.signal,
      onBytesRead: (bytes) => (meter.bytes += bytes),
      onProgress: ({ rows }) => (meter.rows = rows),
      // progress is built for every settled request; with --quiet nothing would ever show it
      onDeliveryProgress: quiet ? undefined : (progress) => (meter.delivery = progress),
      onNotice: quiet ? undefined : (notice) => {
        if (notice.type === 'waiting') meter.waitingUntil = notice.untilWallMs;
        const line = noticeLine(notice, spinner !== undefined, options.hourly, lastPause);
        if (line === undefined) return;
        spinner?.clear();
        process.stderr.write(`${line}\n`);
        spinner?.render();
      },
    });
  } finally {
    if (ticker !== undefined) clearInterval(ticker);
    spinner?.stop();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  const d = summary.delivery;
  if (flags.json === true) {
    const delivery = d === undefined ? undefined : { ...d, fatal: d.fatal === undefined ? undefined : { name: d.fatal.name, message: d.fatal.message } };
    process.stdout.write(summaryJson('upload', summary, { delivery, rowsPossiblyDuplicated: d?.rowsPossiblyDuplicated ?? 0 }));
  } else {
    const planned = formatSummary('upload', summary, options.limits).replace(/would be sent/, 'planned');
    process.stdout.write(planned);
    if (d !== undefined) process.stdout.write(`${deliveryLines(d, summary.elapsedMs).join('\n')}\n`);
  }
  const fatal = d?.fatal ?? summary.fatal;
  if (fatal !== undefined) reportFatal(fatal);
  process.exitCode = exitCode(summary);
}
