// Runs `track upload` over the network: signals, progress, the summary and the exit status.
import chalk from 'chalk';
import { stat } from 'node:fs/promises';
import { DeliveryError, InputError } from '../errors.js';
import { send, type SendOptions } from '../send.js';
import type { DeliveryProgress, DeliverySummary } from '../transport/index.js';
import type { UploadSummary } from '../upload.js';
import { formatSummary } from './commands/plan-report.js';
import type { UploadFlags } from './commands/upload.js';
import { EXIT } from './run.js';

const number = (n: number): string => Math.round(n).toLocaleString('en-US');

function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s}s` : s < 3600 ? `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s` : `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

interface Meter {
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
  if (m.totalBytes > 0 && m.bytes > 0 && m.bytes < m.totalBytes) {
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
  if (d.unknownOutcomes > 0) {
    lines.push(chalk.yellow(`unknown     ${number(d.unknownOutcomes)} requests broke off after sending (${number(d.rowsInUnknownRequests)} rows); ${number(d.rowsPossiblyDuplicated)} rows possibly duplicated`));
  }
  if (d.requestsAbandoned > 0) lines.push(chalk.yellow(`unsent      ${number(d.requestsAbandoned)} requests not finished: run again with --resume`));
  lines.push(`elapsed     ${duration(elapsedMs)}, ${number((accepted * 1000) / Math.max(1, elapsedMs))} rows/s accepted`);
  for (const warning of d.warnings) lines.push(chalk.yellow(`warning     ${warning}`));
  if (d.fatal !== undefined) lines.push(chalk.red(`stopped     ${d.fatal.message}`));
  return lines;
}

function exitCode(summary: UploadSummary<DeliverySummary>): number {
  const d = summary.delivery;
  if (d?.fatal instanceof InputError) return EXIT.usage;
  if (d?.fatal !== undefined) return EXIT.fatal;
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
  const spinner = !quiet && tty ? (await import('ora')).default({ stream: process.stderr, text: 'starting' }).start() : undefined;
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
      onNotice: quiet || spinner !== undefined ? undefined : (notice) => {
        if (notice.type === 'rate-limited') process.stderr.write(`rate limited: all sending paused for ${duration(notice.waitMs)}\n`);
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
    process.stdout.write(`${JSON.stringify({ command: 'upload', ...summary, delivery })}\n`);
  } else {
    const planned = formatSummary('upload', summary, options.limits).replace(/would be sent/, 'planned');
    process.stdout.write(planned);
    if (d !== undefined) process.stdout.write(`${deliveryLines(d, summary.elapsedMs).join('\n')}\n`);
  }
  if (d?.fatal !== undefined) {
    process.stderr.write(`track: ${d.fatal.message}\n`);
    const unexpected = !(d.fatal instanceof DeliveryError) && !(d.fatal instanceof InputError);
    if (unexpected && process.env.TRACK_DEBUG) process.stderr.write(`${d.fatal.stack ?? ''}\n`);
  }
  process.exitCode = exitCode(summary);
}
