// Runs validate / upload --dry-run: progress on a terminal, then the summary, then the exit status
// (0 every row valid, 1 some row rejected; usage errors are thrown to run.ts for 2).
import chalk from 'chalk';
import type { BatchLimits } from '../../model/limits.js';
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
  return `${lines.join('\n')}\n`;
}

export async function runPlanCommand(verb: string, options: UploadOptions, flags: { json?: boolean }): Promise<void> {
  const showProgress = process.stderr.isTTY === true && flags.json !== true;
  const spinner = showProgress ? (await import('ora')).default({ stream: process.stderr, text: 'reading' }).start() : undefined;
  let last = 0;
  let summary: UploadSummary;
  try {
    summary = await upload({
      ...options,
      stdin: process.stdin,
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
  }
  if (flags.json === true) process.stdout.write(`${JSON.stringify({ command: verb, ...summary })}\n`);
  else process.stdout.write(formatSummary(verb, summary, options.limits));
  process.exitCode = summary.rejected > 0 ? EXIT.rejected : EXIT.ok;
}
