// In GitHub Actions (GITHUB_ACTIONS=true): a Markdown summary of the run appended to
// $GITHUB_STEP_SUMMARY, step outputs in $GITHUB_OUTPUT, and an `::error file=…,line=…::` annotation
// for the first rejected rows of each reason. A consumer of the run's events: its figures are the
// summary's (figures.ts), its rejected rows the rejects file's.
import { randomUUID } from 'node:crypto';
import { appendFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { fileLineOf, type RejectRecord } from '../../model/request.js';
import { reasonOf } from '../../upload/summary.js';
import { asSummary, runFigures, type RunFigures, type SummaryFields } from './figures.js';
import type { RunConsumer, RunEvent } from './run-events.js';

/** Annotations, at most, in all (GitHub shows 10 error annotations per step). */
export const MAX_ANNOTATIONS = 10;
/** Rejected rows listed in the step summary. */
const ROWS_LISTED = 10;
/** Reasons whose first rows are kept for annotations. */
const MAX_REASONS = 100;

export interface GithubEnvironment {
  /** $GITHUB_STEP_SUMMARY */
  summaryPath?: string;
  /** $GITHUB_OUTPUT */
  outputPath?: string;
  /** $GITHUB_WORKSPACE: annotation paths are made relative to it. */
  workspace?: string;
  /** $RUNNER_TEMP: where the JSON summary is written. */
  runnerTemp?: string;
  /** --summary-file: the JSON summary is there already, and the `summary-file` output names it. */
  summaryFile?: string;
}

/** A workflow command's message: `%`, CR and LF escaped (docs: "Workflow commands", as @actions/core escapes them). */
export const escapeData = (text: string): string => text.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');

/** A workflow command's property value: as data, and `:` and `,` too. */
export const escapeProperty = (text: string): string => escapeData(text).replace(/:/g, '%3A').replace(/,/g, '%2C');

/** `::error file=F,line=L,title=T::MESSAGE` */
export function errorAnnotation(properties: Record<string, string | number | undefined>, message: string): string {
  const given = Object.entries(properties).filter(([, value]) => value !== undefined && value !== '');
  const props = given.map(([key, value]) => `${key}=${escapeProperty(String(value))}`).join(',');
  return `::error${props === '' ? '' : ` ${props}`}::${escapeData(message)}`;
}

/** One step output in the multiline form, under a delimiter the value cannot hold. */
export function outputLine(name: string, value: string | number): string {
  const text = String(value);
  let delimiter = `ghadelimiter_${randomUUID()}`;
  while (text.includes(delimiter)) delimiter = `ghadelimiter_${randomUUID()}`;
  return `${name}<<${delimiter}\n${text}\n${delimiter}\n`;
}

/** Text in a Markdown table cell: no markup, no HTML, no line breaks, no column breaks. */
export const markdownCell = (text: string): string =>
  text
    .replace(/[\r\n]+/g, ' ')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/([\\`*_[\]|#~])/g, '\\$1');

const grouped = (n: number): string => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');

/** The rows to annotate: the first of each reason in turn, then the second of each, to at most MAX_ANNOTATIONS. */
export function annotatedRows(byReason: Map<string, RejectRecord[]>): RejectRecord[] {
  const out: RejectRecord[] = [];
  const lists = [...byReason.values()];
  for (let i = 0; out.length < MAX_ANNOTATIONS && lists.some((list) => i < list.length); i += 1) {
    for (const list of lists) if (i < list.length && out.length < MAX_ANNOTATIONS) out.push(list[i]);
  }
  return out;
}

function summaryMarkdown(command: string, figures: RunFigures, summary: SummaryFields, exitStatus: number, rows: RejectRecord[], stop: string | undefined): string {
  const status = exitStatus === 0 ? 'every row accepted' : exitStatus === 1 ? 'finished with rejected rows' : exitStatus === 130 ? `stopped${stop === undefined ? '' : ` by ${stop}`}` : 'failed';
  const d = summary.delivery;
  const lines = [
    `### track ${markdownCell(command)}: ${status} (exit status ${exitStatus})`,
    '',
    '| | |',
    '| --- | --- |',
    `| rows read | ${grouped(figures.rows)} |`,
    `| rejected | ${grouped(figures.rejected)} |`,
    `| requests | ${grouped(figures.requests)}${d === undefined ? ' (would be sent)' : ` (${grouped(d.retries)} retries, ${grouped(d.rateLimited)} answered 429)`} |`,
    `| data points | ${grouped(figures.dataPoints)} ${d === undefined ? 'would be spent' : 'spent'}${figures.avoidedDataPoints > 0 ? `, ${grouped(figures.avoidedDataPoints)} avoided` : ''} |`,
    `| duration | ${figures.durationSeconds} s |`,
  ];
  const fatal = d?.fatal ?? summary.fatal;
  if (fatal !== undefined) lines.push(`| stopped by | ${markdownCell(fatal.message)} |`);
  if (figures.reasons.length > 0) {
    // a row refused for several reasons counts under each: said where the counts add up to more than the rows
    const several = figures.reasons.reduce((sum, r) => sum + r.rows, 0) > figures.rejected;
    lines.push('', '#### Rejects by reason', '', ...(several ? ['A row refused for several reasons counts under each.', ''] : []), '| rows | reason | where |', '| ---: | --- | --- |');
    for (const r of figures.reasons) lines.push(`| ${grouped(r.rows)} | ${markdownCell(r.reason)} | ${r.where} |`);
  }
  if (rows.length > 0) {
    lines.push('', `#### The first rejected rows${summary.rejectsPath === undefined ? '' : ` (all in \`${summary.rejectsPath.replace(/`/g, "'")}\`)`}`, '');
    lines.push('| file | line | kind | reasons |', '| --- | ---: | --- | --- |');
    // (a JSON array's element: the line where it begins, and its row)
    for (const r of rows) lines.push(`| ${markdownCell(r.file)} | ${fileLineOf(r) === r.line ? r.line : `${fileLineOf(r)} (row ${r.line})`} | ${r.kind} | ${markdownCell(r.errors.join('; '))} |`);
  }
  return `${lines.join('\n')}\n\n`;
}

/** Told when stdout and stderr both carry JSON, and no annotation can be printed without breaking one of them. */
export const UNANNOTATED =
  'GitHub Actions: the rejected rows are not annotated, as stdout holds the --json summary and stderr the --progress ndjson events (the step summary lists them; --events FILE in place of --progress ndjson keeps the annotations, on stderr)';

/** Where each line goes: annotations (absent: none are printed), and warnings about a file that cannot be written. */
export interface GithubSinks {
  annotate?: (line: string) => void;
  warn: (message: string) => void;
}

export function githubActions(command: string, env: GithubEnvironment, sinks: GithubSinks): RunConsumer {
  const byReason = new Map<string, RejectRecord[]>();
  const first: RejectRecord[] = [];
  let stop: string | undefined;
  let ending: (() => Promise<void>) | undefined;

  const where = (file: string): string | undefined => {
    if (file === '-') return undefined;
    if (env.workspace === undefined) return file;
    const inside = relative(env.workspace, resolve(file));
    return inside.startsWith('..') || isAbsolute(inside) ? file : inside;
  };

  /** Writes one file GitHub reads; one that cannot be written is told, naming its variable, and the others are written all the same. */
  const write = async (variable: string, path: string | undefined, text: string, add: boolean): Promise<boolean> => {
    if (path === undefined) return false;
    try {
      await (add ? appendFile : writeFile)(path, text);
      return true;
    } catch (error) {
      sinks.warn(`GitHub Actions: cannot write ${variable} ${path} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
      return false;
    }
  };

  const annotateRows = (rows: RejectRecord[]): void => {
    const { annotate } = sinks;
    if (annotate === undefined) {
      if (rows.length > 0) sinks.warn(UNANNOTATED);
      return;
    }
    for (const row of rows) {
      const reason = reasonOf(row.errors[0] ?? 'rejected');
      annotate(errorAnnotation({ file: where(row.file), line: fileLineOf(row), title: `track: rejected ${row.kind} row (${reason})` }, `${row.errors.join('; ')}`));
    }
  };

  const outputs = async (values: Record<string, string | number | undefined>): Promise<void> => {
    const lines = Object.entries(values).filter(([, v]) => v !== undefined).map(([name, v]) => outputLine(name, v as string | number));
    await write('$GITHUB_OUTPUT', env.outputPath, lines.join(''), true);
  };

  const end = (json: Record<string, unknown>, exitStatus: number) => async (): Promise<void> => {
    const summary = asSummary(json);
    const figures = runFigures(summary);
    annotateRows(annotatedRows(byReason));
    const summaryFile = env.summaryFile ?? join(env.runnerTemp ?? tmpdir(), `track-${command.replace(/\W+/g, '-')}-summary-${process.pid}-${Date.now()}.json`);
    const written = env.summaryFile !== undefined || (await write('$RUNNER_TEMP', summaryFile, `${JSON.stringify(json)}\n`, false));
    await write('$GITHUB_STEP_SUMMARY', env.summaryPath, summaryMarkdown(command, figures, summary, exitStatus, first, stop), true);
    await outputs({
      rows: figures.rows,
      rejected: figures.rejected,
      requests: figures.requests,
      'data-points': figures.dataPoints,
      'exit-status': exitStatus,
      'summary-file': written ? summaryFile : undefined,
      'rejects-file': summary.rejectsPath,
    });
  };

  const failed = (message: string, exitStatus: number) => async (): Promise<void> => {
    await write('$GITHUB_STEP_SUMMARY', env.summaryPath, `### track ${markdownCell(command)}: failed (exit status ${exitStatus})\n\n${markdownCell(message)}\n\n`, true);
    sinks.annotate?.(errorAnnotation({ title: `track ${command}` }, message));
    await outputs({ 'exit-status': exitStatus });
  };

  return {
    event(event: RunEvent) {
      if (event.type === 'stop') stop ??= event.signal;
      else if (event.type === 'end') ending = end(event.summary, event.exitStatus);
      else if (event.type === 'error') ending = failed(event.error.message, event.exitStatus);
    },
    reject(record) {
      if (first.length < ROWS_LISTED) first.push(record);
      const reason = reasonOf(record.errors[0] ?? 'rejected');
      const list = byReason.get(reason);
      if (list === undefined) {
        if (byReason.size < MAX_REASONS) byReason.set(reason, [record]);
      } else if (list.length < MAX_ANNOTATIONS) list.push(record);
    },
    close: () => ending?.() ?? Promise.resolve(),
  };
}
