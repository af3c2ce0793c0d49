// Runs validate / upload --dry-run: progress on a terminal, then the summary, then the exit status
// (0 every row valid, 1 some row rejected; usage errors are thrown to run.ts for 2).
import chalk from 'chalk';
import { setFlagsFromString } from 'node:v8';
import type { BatchLimits } from '../../model/limits.js';
import { DeliveryError, InputError, OutputError, UsageError } from '../../errors.js';
import { upload, type UploadOptions, type UploadSummary } from '../../upload.js';
import { EXIT } from '../run.js';

const number = (n: number): string => n.toLocaleString('en-US');
const counted = (n: number, one: string, many = `${one}s`): string => `${number(n)} ${n === 1 ? one : many}`;

function limitsText(limits: BatchLimits | undefined): string {
  const parts: string[] = [];
  if (limits?.maxTotal !== undefined) parts.push(`at most ${number(limits.maxTotal)} items each`);
  if (limits?.maxPerArray !== undefined) parts.push(`at most ${number(limits.maxPerArray)} per array`);
  return parts.length === 0 ? 'no item limit' : parts.join(', ');
}

function reasonLines(reasons: Record<string, number>): string[] {
  const entries = Object.entries(reasons).sort((a, b) => b[1] - a[1]);
  const width = Math.max(...entries.map(([, n]) => number(n).length));
  return entries.map(([reason, n]) => `              ${number(n).padStart(width)}  ${reason}`);
}

export function formatSummary(verb: string, summary: UploadSummary, limits: BatchLimits | undefined): string {
  const lines: string[] = [];
  const seconds = (summary.elapsedMs / 1000).toFixed(1);
  const files = counted(summary.files.length, 'file');
  lines.push(chalk.bold(`${verb}: ${files}, ${counted(summary.rows, 'row')} read in ${seconds} s`));
  for (const file of summary.files) {
    const kind = file.kind === undefined ? file.format : `${file.format}, ${file.kind}`;
    lines.push(`  ${file.file}  ${counted(file.rows, 'row')} (${kind})`);
  }
  if (summary.skipped > 0 || summary.skippedItems > 0) {
    const inPart = summary.skippedItems > 0 ? `; ${counted(summary.skippedItems, 'item')} of lines delivered in part` : '';
    lines.push(`skipped     ${counted(summary.skipped, 'row')} already delivered${inPart}`);
  }
  const { attributes, events, purchases } = summary.items;
  lines.push(`items       ${number(attributes)} attributes, ${number(events)} events, ${number(purchases)} purchases`);
  if (summary.rejected === 0) lines.push(`rejected    ${chalk.green('none')}`);
  else {
    lines.push(chalk.red(`rejected    ${counted(summary.rejected, 'row')}, written to ${summary.rejectsPath ?? '(no file)'}`));
    lines.push(...reasonLines(summary.rejectReasons));
  }
  if (summary.warnings > 0) {
    lines.push(chalk.yellow(`warnings    ${number(summary.warnings)} (sent all the same)`));
    lines.push(...reasonLines(summary.warningReasons));
    for (const example of summary.warningExamples) lines.push(`            ${example}`);
  }
  const written = summary.outPath === undefined ? '' : `, written to ${summary.outPath}`;
  lines.push(`requests    ${number(summary.requests)} would be sent (${limitsText(limits)})${written}`);
  for (const note of summary.notes) lines.push(chalk.yellow(`note        ${note}`));
  if (summary.interrupted) lines.push(chalk.yellow('interrupted before every row was read (Ctrl-C)'));
  return `${lines.join('\n')}\n`;
}

/** The summary as JSON: errors as their name and message. */
export function summaryJson(command: string, summary: UploadSummary<unknown>, extra: Record<string, unknown> = {}): string {
  const fatal = summary.fatal === undefined ? undefined : { name: summary.fatal.name, message: summary.fatal.message };
  return `${JSON.stringify({ command, ...summary, fatal, ...extra })}\n`;
}

/** Exit status of a run that stopped on an error: 2 when it is the person's to fix and nothing was sent, else 3. */
export function fatalExit(fatal: Error, sentAnything: boolean): number {
  const theirs = fatal instanceof UsageError || fatal instanceof InputError;
  return theirs && !sentAnything ? EXIT.usage : EXIT.fatal;
}

/** Writes an error that stopped the run to stderr, with its stack when TRACK_DEBUG asks and it is not one of ours. */
export function reportFatal(fatal: Error): void {
  process.stderr.write(`track: ${fatal.message}\n`);
  const ours = fatal instanceof UsageError || fatal instanceof InputError || fatal instanceof DeliveryError || fatal instanceof OutputError;
  if (!ours && process.env.TRACK_DEBUG) process.stderr.write(`${fatal.stack ?? ''}\n`);
}

/**
 * A dry run plans in this thread, where V8 lets the heap grow to several times what it holds before
 * collecting: with rows of 20,000 cells, peak memory then grows with the file. Growing it by 10% at
 * a time keeps the peak near what is live (a 20,000-column file: 157 MB at 100 rows, 163 MB at
 * 1,000, against 218 and 284 MB) for no time measured.
 */
const HEAP_GROWING_PERCENT = '--heap-growing-percent=10';

export async function runPlanCommand(verb: string, options: UploadOptions, flags: { json?: boolean }): Promise<void> {
  setFlagsFromString(HEAP_GROWING_PERCENT);
  // Ctrl-C: stop reading and report what was read; a second one ends the process at once
  const stop = new AbortController();
  const onSignal = (): void => {
    if (stop.signal.aborted) process.exit(EXIT.interrupted);
    stop.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const showProgress = process.stderr.isTTY === true && flags.json !== true;
  const spinner = showProgress ? (await import('ora')).default({ stream: process.stderr, text: 'reading', discardStdin: false }).start() : undefined;
  let last = 0;
  let summary: UploadSummary;
  try {
    summary = await upload({
      ...options,
      stdin: process.stdin,
      stopSignal: stop.signal,
      onProgress: spinner
        ? ({ file, rows, requests }) => {
            const now = Date.now();
            if (now - last < 100) return;
            last = now;
            spinner.text = `reading ${file}: ${number(rows)} rows, ${number(requests)} requests`;
          }
        : undefined,
    });
  } finally {
    spinner?.stop();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  if (flags.json === true) process.stdout.write(summaryJson(verb, summary));
  else process.stdout.write(formatSummary(verb, summary, options.limits));
  if (summary.fatal !== undefined) {
    reportFatal(summary.fatal);
    process.exitCode = fatalExit(summary.fatal, false);
  } else if (summary.interrupted) process.exitCode = EXIT.interrupted;
  else process.exitCode = summary.rejected > 0 ? EXIT.rejected : EXIT.ok;
}
