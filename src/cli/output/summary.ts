// The summary of a run as a person reads it (and as JSON for scripts): what was read, rejected and
// planned, then what the delivery did; and an error that stopped the run.
import chalk from 'chalk';
import { DeliveryError, InputError, OutputError, UsageError } from '../../errors.js';
import type { BatchLimits } from '../../model/limits.js';
import type { DeliverySummary } from '../../transport/index.js';
import { shareOf } from '../../upload/shared-pace.js';
import type { UploadSummary } from '../../upload/upload.js';
import { refusedItems } from './figures.js';
import { counted, duration, number } from './progress.js';
import { refusedOf } from '../../transport/summary.js';

function limitsText(limits: BatchLimits | undefined): string {
  const parts: string[] = [];
  if (limits?.maxTotal !== undefined) parts.push(`at most ${counted(limits.maxTotal, 'item')} each`);
  if (limits?.maxPerArray !== undefined) parts.push(`at most ${number(limits.maxPerArray)} per array`);
  return parts.length === 0 ? 'no item limit' : parts.join(', ');
}

function reasonLines(reasons: Record<string, number>): string[] {
  const entries = Object.entries(reasons).sort((a, b) => b[1] - a[1]);
  const width = Math.max(...entries.map(([, n]) => number(n).length));
  return entries.map(([reason, n]) => `              ${number(n).padStart(width)}  ${reason}`);
}

/** The most requests a dry run's upload would start in a second and in an hour. */
export interface Pace {
  rate: number;
  hourly?: number;
  /** The shards (--shard) that each pace at their share of rate and hourly (no --rate-store): this run's estimate is at its share. */
  shards?: number;
}

/** The pace a run of `pace` sends at: its share of it, when it is one of several shards. */
export function ownPace(pace: Pace): Pace {
  const n = pace.shards ?? 1;
  if (n <= 1) return pace;
  return { rate: shareOf(pace.rate, n), hourly: pace.hourly === undefined ? undefined : shareOf(pace.hourly, n) };
}

/** The least time `requests` take at the pace (a shard's: at its share): whole hours of `hourly` requests, then the rest at `rate`. */
export function estimateSeconds(requests: number, shared: Pace): number {
  const pace = ownPace(shared);
  const hours = pace.hourly === undefined || requests <= pace.hourly ? 0 : Math.ceil(requests / pace.hourly) - 1;
  return hours * 3600 + (requests - hours * (pace.hourly ?? 0)) / pace.rate;
}

/** What a dry run says sending would take. */
export function estimateOf(summary: UploadSummary, pace: Pace) {
  return {
    requests: summary.requests,
    dataPoints: summary.dataPoints.planned,
    avoided: summary.dataPoints.avoided,
    unchanged: summary.unchanged,
    seconds: Math.round(estimateSeconds(summary.requests, pace) * 10) / 10,
    rate: pace.rate,
    hourly: pace.hourly,
  };
}

function dataPointLines(summary: UploadSummary, pace: Pace | undefined): string[] {
  const lines: string[] = [];
  const { planned, avoided } = summary.dataPoints;
  const unchanged = summary.unchanged > 0 ? `; ${counted(summary.unchanged, 'item')} unchanged, not sent` : '';
  const saved = avoided > 0 || summary.unchanged > 0 ? `, ${number(avoided)} avoided${unchanged}` : '';
  if (summary.delivery !== undefined) lines.push(`data points ${number(summary.delivery.dataPoints)} spent${saved}`);
  else lines.push(`data points ${number(planned)} would be spent${saved}`);
  if (pace !== undefined && summary.delivery === undefined) {
    const own = ownPace(pace);
    const hourly = own.hourly === undefined ? '' : ` and ${number(own.hourly)} an hour`;
    const share = own === pace ? '' : ` (this shard's share of --rate ${number(pace.rate)}${pace.hourly === undefined ? '' : ` and --hourly ${number(pace.hourly)}`}, --shard)`;
    const at = `at ${counted(own.rate, 'request')}/s${hourly}${share}`;
    const seconds = estimateSeconds(summary.requests, pace);
    const take = seconds < 1 ? 'under a second' : `at least ${duration(seconds * 1000)}`;
    lines.push(`estimate    ${counted(summary.requests, 'request')} ${summary.requests === 1 ? 'takes' : 'take'} ${take} ${at}`);
  }
  return lines;
}

/** Attributes shown in the per-attribute delta table, those that changed most first (--json has all). */
const MAX_COLUMN_LINES = 12;
/** Files the summary names a line each (a run of thousands of files is not a line a file). */
const MAX_FILE_LINES = 20;

/** With --delta: a table of the attributes compared, each with its values changed, unchanged and cleared. */
function columnLines(columns: UploadSummary['deltaColumns']): string[] {
  if (columns === undefined) return [];
  const entries = Object.entries(columns).sort(([a, x], [b, y]) => y.changed + y.cleared - (x.changed + x.cleared) || a.localeCompare(b));
  const shown = entries.slice(0, MAX_COLUMN_LINES);
  const nameWidth = Math.max(...shown.map(([name]) => name.length));
  const rows = shown.map(([name, { changed, unchanged, cleared }]) => [name, ...[changed, unchanged, cleared].map(number)]);
  const widths = [1, 2, 3].map((i) => Math.max(...[['', 'changed', 'unchanged', 'cleared'], ...rows].map((row) => row[i].length)) + 2);
  const line = ([name, ...values]: string[]): string => `${name.padEnd(nameWidth)}${values.map((value, i) => value.padStart(widths[i])).join('')}`;
  const lines = [`columns     ${line(['', 'changed', 'unchanged', 'cleared'])}`];
  for (const row of rows) lines.push(`            ${line(row)}`);
  if (entries.length > shown.length) lines.push(`            and ${counted(entries.length - shown.length, 'more attribute')} (--json lists them all)`);
  return lines;
}

/** What was read and planned; `verb` names the command (`validate`, `upload --dry-run`, `upload`); `pace` a dry run's, for its estimate. */
export function formatSummary(verb: string, summary: UploadSummary, limits: BatchLimits | undefined, pace?: Pace): string {
  const lines: string[] = [];
  const seconds = (summary.elapsedMs / 1000).toFixed(1);
  const files = counted(summary.files.length, 'file');
  // the rows of files an earlier run settled whole are counted, not read
  const unread = summary.unread ?? 0;
  const notRead = unread === 0 ? '' : `, ${counted(unread, 'row')} not read again (an earlier run settled ${unread === 1 ? 'it' : 'them'})`;
  lines.push(chalk.bold(`${verb}: ${files}, ${counted(summary.rows - unread, 'row')} read${notRead} in ${seconds} s`));
  for (const file of summary.files.slice(0, MAX_FILE_LINES)) {
    const kind = file.kind === undefined ? file.format : `${file.format}, ${file.kind}`;
    lines.push(`  ${file.file}  ${counted(file.rows, 'row')} (${kind})${file.unread === true ? ', not read again' : ''}`);
  }
  const others = summary.files.length - MAX_FILE_LINES;
  if (others > 0) {
    let rows = 0;
    for (let i = MAX_FILE_LINES; i < summary.files.length; i += 1) rows += summary.files[i].rows;
    lines.push(`  and ${counted(others, 'other file')}, ${counted(rows, 'row')} (--json lists every file)`);
  }
  if (summary.skipped > 0 || summary.skippedItems > 0) {
    const inPart = summary.skippedItems > 0 ? `; ${counted(summary.skippedItems, 'item')} of lines delivered in part` : '';
    const rejected = summary.skippedRejected ?? 0;
    const before = rejected > 0 ? `, and ${counted(rejected, 'row')} an earlier run rejected (in its rejects file)` : '';
    lines.push(`skipped     ${counted(summary.skipped - rejected, 'row')} already delivered${inPart}${before}`);
  }
  if (summary.otherShards > 0) lines.push(`shard       ${counted(summary.otherShards, 'row')} left out: their users are in other shards (--shard)`);
  const { attributes, events, purchases } = summary.items;
  lines.push(`items       ${counted(attributes, 'attribute')}, ${counted(events, 'event')}, ${counted(purchases, 'purchase')}`);
  lines.push(...rejectedLines(summary));
  if (summary.droppedFields > 0) {
    lines.push(chalk.yellow(`dropped     ${counted(summary.droppedFields, 'field')} left out of rows sent without them, written to ${summary.rejectsPath ?? '(no file)'}`));
  }
  if (summary.warnings > 0) {
    lines.push(chalk.yellow(`warnings    ${number(summary.warnings)} ${warnedText(summary, verb)}`));
    lines.push(...reasonLines(summary.warningReasons));
    for (const example of summary.warningExamples) lines.push(`            ${example}`);
  }
  const written = summary.outPath === undefined ? '' : `, written to ${summary.outPath === '-' ? 'standard output' : summary.outPath}`;
  const planned = verb === 'upload' ? 'planned' : 'would be sent';
  lines.push(`requests    ${number(summary.requests)} ${planned} (${limitsText(limits)})${written}`);
  lines.push(...dataPointLines(summary, pace));
  lines.push(...columnLines(summary.deltaColumns));
  for (const note of summary.notes) lines.push(chalk.yellow(`note        ${note}`));
  if (summary.delivery !== undefined) lines.push(...deliveryLines(summary.delivery, summary.elapsedMs, summary.journalPath !== undefined, summary.rowsNotSent ?? 0));
  // what stopped a run that sends nothing (a dry run, validate), where a delivery would say it
  else if (summary.fatal !== undefined) lines.push(chalk.red(`stopped     ${summary.fatal.message}`));
  if (summary.interrupted) lines.push(chalk.yellow(`interrupted ${interruptedText(summary)}`));
  return `${lines.join('\n')}\n`;
}

/** What became of the items warned of: sent all the same, or some left out as unchanged and not sent. */
function warnedText(summary: UploadSummary, verb: string): string {
  const sent = verb === 'upload' ? 'sent' : 'would be sent';
  const unsent = summary.warningsUnsent ?? 0;
  if (unsent === 0) return `(${sent} all the same)`;
  const left = 'on items left out as unchanged: not sent';
  return unsent === summary.warnings ? `(${left})` : `(${number(summary.warnings - unsent)} ${sent} all the same, ${number(unsent)} ${left})`;
}

/** Every row rejected, before sending (by the plan) and after (by the server, or as of unknown outcome), with their reasons; or none. */
function rejectedLines(summary: UploadSummary): string[] {
  const refused = refusedItems(summary.delivery);
  const total = summary.rejected + refused;
  if (total === 0) return [`rejected    ${chalk.green('none')}`];
  // a resumed run counts the rows an earlier run rejected (whichever way) apart: not as before sending
  const earlier = summary.skippedRejected ?? 0;
  const planned = summary.rejected - earlier;
  const parts = [
    ...(planned > 0 ? [`${number(planned)} before sending`] : []),
    ...(refused > 0 ? [`${number(refused)} after sending`] : []),
    ...(earlier > 0 ? [`${number(earlier)} by an earlier run`] : []),
  ];
  const where = parts.length > 1 ? ` (${parts.join(', ')})` : planned > 0 ? '' : refused > 0 ? ' after sending' : ' by an earlier run';
  const reasons = { ...summary.rejectReasons };
  for (const [reason, n] of Object.entries(summary.refusedReasons ?? {})) reasons[reason] = (reasons[reason] ?? 0) + n;
  return [chalk.red(`rejected    ${counted(total, 'row')}${where}, written to ${summary.rejectsPath ?? '(no file)'}`), ...reasonLines(reasons)];
}

/** What a run stopped by a signal left: the rows read, those unsettled, and whether the input was read to its end. */
function interruptedText(summary: UploadSummary): string {
  const read = summary.readToEnd ? 'after every row was read' : `after ${counted(summary.rows, 'row')} of the input ${summary.rows === 1 ? 'was' : 'were'} read`;
  const d = summary.delivery;
  if (d === undefined) return `by a signal (Ctrl-C, SIGTERM, SIGHUP) ${read}`;
  const unread = summary.readToEnd ? '' : ', and the rest of the input is not read yet';
  // every row read is accepted, rejected, left out or unsettled; of these, some were not sent yet
  const unsettled = summary.rowsUnsettled ?? d.rowsAbandoned;
  const notSent = summary.rowsNotSent ?? 0;
  const taken = unsettled - notSent;
  const parts = notSent === 0 ? '' : taken === 0 ? ' (not sent yet)' : ` (${number(taken)} in requests tried and left without a verdict, ${number(notSent)} not sent yet)`;
  // a run without a journal (standard input) cannot be resumed
  const resume = summary.journalPath !== undefined && (unsettled > 0 || !summary.readToEnd) ? '; run again with --resume to send the rest' : '';
  return `by a signal (Ctrl-C, SIGTERM, SIGHUP) ${read}: ${counted(unsettled, 'row')} unsettled${parts}${unread}${resume}`;
}

/** What the delivery did; `notSent`: rows read and planned that it never took (it stopped first). */
function deliveryLines(d: DeliverySummary, elapsedMs: number, resumable: boolean, notSent: number): string[] {
  const lines: string[] = [];
  for (const kind of ['attributes', 'events', 'purchases'] as const) {
    const t = d.items[kind];
    if (t.sent + t.rejected === 0) continue;
    // rows of an unknown outcome were not answered: told apart from the rows sent (a summary an earlier version wrote counts none)
    const noVerdict = t.unknown === undefined || t.unknown === 0 ? '' : `; ${number(t.unknown)} more rejected with no verdict (--on-unknown reject)`;
    lines.push(`${kind.padEnd(11)} sent ${number(t.sent)}, accepted ${number(t.accepted)}, rejected ${number(refusedOf(t))}${noVerdict}`);
  }
  const accepted = d.items.attributes.accepted + d.items.events.accepted + d.items.purchases.accepted;
  lines.push(`requests    ${number(d.requestsSent)} sent, ${counted(d.retries, 'retry', 'retries')}, ${number(d.rateLimited)} rate-limited (429)`);
  if (d.requestsNotDelivered > 0) {
    // a 401 or a request over the batch limit is an answer, but no verdict on the rows
    lines.push(chalk.yellow(`undelivered ${counted(d.requestsNotDelivered, 'request')} got no verdict on ${d.requestsNotDelivered === 1 ? 'its' : 'their'} rows:`));
    for (const line of reasonLines(d.notDelivered)) lines.push(chalk.yellow(line));
  }
  if (d.unknownOutcomes > 0) {
    lines.push(chalk.yellow(`unknown     ${counted(d.unknownOutcomes, 'request')} with no verdict from the server (${counted(d.rowsInUnknownRequests, 'row')}); ${counted(d.rowsPossiblyDuplicated, 'row')} possibly duplicated`));
  }
  if (d.rowsPossiblyDuplicated > 0 && d.unknownOutcomes === 0) {
    lines.push(chalk.yellow(`resent      ${counted(d.rowsPossiblyDuplicated, 'row')} possibly duplicated: the run before stopped while ${d.rowsPossiblyDuplicated === 1 ? 'it was' : 'they were'} in flight`));
  }
  if (d.requestsAbandoned > 0 || notSent > 0) {
    const resume = resumable ? ': run again with --resume to send them' : '';
    const taken = d.requestsAbandoned > 0 ? `${counted(d.requestsAbandoned, 'request')} (${counted(d.rowsAbandoned, 'row')}) tried and left without a verdict` : '';
    const read = notSent === 0 ? '' : `${counted(notSent, 'row')} read and not sent yet`;
    lines.push(chalk.yellow(`unsettled   ${[taken, read].filter((part) => part !== '').join(', and ')}${resume}`));
  }
  lines.push(`elapsed     ${duration(elapsedMs)}, ${number((accepted * 1000) / Math.max(1, elapsedMs))} rows/s accepted`);
  for (const warning of d.warnings) lines.push(chalk.yellow(`warning     ${warning}`));
  if (d.fatal !== undefined) lines.push(chalk.red(`stopped     ${d.fatal.message}`));
  return lines;
}

const errorJson = (error: Error | undefined): { name: string; message: string } | undefined =>
  error === undefined ? undefined : { name: error.name, message: error.message };

/**
 * The summary as JSON: errors as their name and message; an upload's with what its delivery did;
 * `more` (the exit status, the shard, the limits) after the counts.
 */
export function summaryJson(command: string, summary: UploadSummary, pace?: Pace, more: Record<string, unknown> = {}): string {
  return `${JSON.stringify(summaryObject(command, summary, pace, more))}\n`;
}

/** The value summaryJson prints (what the run's `end` event carries). */
export function summaryObject(command: string, summary: UploadSummary, pace?: Pace, more: Record<string, unknown> = {}): Record<string, unknown> {
  const fatal = errorJson(summary.fatal);
  const d = summary.delivery;
  // spent: the data points of items the server accepted (none in a dry run)
  const dataPoints = { sent: d?.dataPoints ?? 0, avoided: summary.dataPoints.avoided, planned: summary.dataPoints.planned };
  if (command !== 'upload') return { command, ...summary, dataPoints, estimate: pace && estimateOf(summary, pace), fatal, ...more };
  const delivery = d === undefined ? undefined : { ...d, fatal: errorJson(d.fatal) };
  return { command, ...summary, dataPoints, fatal, delivery, rowsPossiblyDuplicated: d?.rowsPossiblyDuplicated ?? 0, ...more };
}

/** The summary of a run that stopped before it had one (a usage error, say): what --summary-file holds then. */
export function failureJson(command: string, error: unknown, more: Record<string, unknown> = {}): string {
  const fatal = error instanceof Error ? errorJson(error) : { name: 'Error', message: String(error) };
  return `${JSON.stringify({ command, fatal, ...more })}\n`;
}

/** Writes an error that stopped the run to stderr, with its stack when TRACK_DEBUG asks and it is not one of ours. */
export function reportFatal(fatal: Error): void {
  process.stderr.write(`track: ${fatal.message}\n`);
  const ours = fatal instanceof UsageError || fatal instanceof InputError || fatal instanceof DeliveryError || fatal instanceof OutputError;
  if (!ours && process.env.TRACK_DEBUG) process.stderr.write(`${fatal.stack ?? ''}\n`);
}
