// `track report`: the summaries of a sharded run's processes (--summary-file, or --json saved)
// added into one: counts summed, reasons merged, the longest elapsed time, every shard named, the
// missing and doubled ones said, and the worst exit status as the verdict.
import { InputError } from '../../errors.js';
import { EXIT } from '../run.js';
import { counted } from './progress.js';
import { estimateSeconds } from './summary.js';

/** A run's --json summary as written to --summary-file (or printed by --json). */
export type SummaryJson = Record<string, unknown> & {
  command?: string;
  exitStatus?: number;
  shard?: { index: number; count: number };
};

export interface ShardReport {
  file: string;
  shard?: { index: number; count: number };
  exitStatus: number;
  rows: number;
  /** Of the rows, those of files an earlier run settled whole: not read again (only when there are any). */
  unread?: number;
  requests: number;
  rejected: number;
  /** The file this summary's run wrote its rejects to, when it wrote any. */
  rejectsPath?: string;
  fatal?: string;
}

export interface Report {
  command: 'report';
  /** The summaries added, in the order given. */
  shards: ShardReport[];
  /** Of N shards, those no summary names (1-based). */
  missingShards: number[];
  /** Shards named by more than one summary. */
  duplicateShards: number[];
  /** The shard counts the summaries disagree on (`--shard 1/4` beside `2/3`), when they do. */
  shardCounts: number[];
  /** The commands the summaries disagree on (`upload` beside `upload --dry-run`), when they do: then nothing says the whole was sent. */
  commands: string[];
  /** The rejects files the summaries name, each once, in their order: each shard writes its own. */
  rejectsPaths: string[];
  /** The worst exit status among the summaries (and 3 when a shard is missing or doubled). */
  exitStatus: number;
  /** The summaries added into one. */
  total: SummaryJson;
}

/** Exit statuses from worst to best: a fatal stop, a usage error, an interrupted run, rejects, success. */
const SEVERITY = [EXIT.fatal, EXIT.usage, EXIT.interrupted, EXIT.rejected, EXIT.ok] as number[];

/** The worse of two exit statuses; a status not known here (a signal's 143, say) counts as fatal. */
export function worseStatus(a: number, b: number): number {
  const rank = (s: number): number => (SEVERITY.includes(s) ? SEVERITY.indexOf(s) : -1);
  return rank(a) <= rank(b) ? a : b;
}

/** Keys whose values are not counts: the latest or longest is kept, not the sum. */
const LONGEST = new Set(['elapsedMs']);
/** Keys that are settings, not counts: kept when every summary agrees (the shards' batch limits, a dry run's pace). */
const SAME = new Set(['limits', 'rate', 'hourly']);
/** Flags that hold of the whole only when they hold of every summary (every shard read every row), where others are or-ed. */
const EVERY = new Set(['readToEnd']);
/** Keys that name one run and mean nothing added up. */
const OWN = new Set(['shard', 'exitStatus', 'rejectsPath', 'outPath', 'fatal', 'otherShards']);

/**
 * Adds b into a: numbers summed (elapsed times: the longest), booleans or-ed (readToEnd and-ed, false where one lacks it), lists joined, objects
 * added key by key; a text or a setting kept when both agree.
 */
export function addSummaries(a: unknown, b: unknown, key = ''): unknown {
  // a summary that does not say so (of a run stopped before its summary: it read nothing) is not
  if (EVERY.has(key) && (a === undefined || b === undefined)) return false;
  if (a === undefined) return b;
  if (b === undefined) return a;
  if (SAME.has(key)) return JSON.stringify(a) === JSON.stringify(b) ? a : undefined;
  if (typeof a === 'number' && typeof b === 'number') return LONGEST.has(key) ? Math.max(a, b) : a + b;
  if (typeof a === 'boolean' && typeof b === 'boolean') return EVERY.has(key) ? a && b : a || b;
  if (Array.isArray(a) && Array.isArray(b)) {
    if (key === 'notes') return [...new Set([...a, ...b])];
    if (key === 'files') return addFiles(a, b);
    return [...a, ...b];
  }
  if (isObject(a) && isObject(b)) {
    const sum: Record<string, unknown> = {};
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
      if (!OWN.has(k)) sum[k] = addSummaries(a[k], b[k], k);
    }
    return key === 'estimate' ? paced(sum) : sum;
  }
  return a === b ? a : undefined;
}

/**
 * A dry run's estimate of its shards together: their requests all count against the one account's
 * pace, so the least time is that of all of them at it (not the shards' times added); none when
 * the shards were given different paces.
 */
function paced(estimate: Record<string, unknown>): Record<string, unknown> {
  const { requests, rate, hourly } = estimate;
  const seconds = typeof requests === 'number' && typeof rate === 'number' && (hourly === undefined || typeof hourly === 'number') ? Math.round(estimateSeconds(requests, { rate, hourly }) * 10) / 10 : undefined;
  return { ...estimate, seconds };
}

/** The files of two runs: one entry a file, its rows added (every shard reads every file). */
function addFiles(a: unknown[], b: unknown[]): unknown[] {
  const byName = new Map<unknown, unknown>();
  for (const f of [...a, ...b]) {
    const name = isObject(f) ? f.file : f;
    if (!byName.has(name)) {
      byName.set(name, f);
      continue;
    }
    const earlier = byName.get(name);
    const sum = addSummaries(earlier, f);
    // not read again by any of them only when none read it (a shard that read it says so by saying nothing)
    if (isObject(sum) && isObject(earlier) && isObject(f) && sum.unread === true && !(earlier.unread === true && f.unread === true)) delete sum.unread;
    byName.set(name, sum);
  }
  return [...byName.values()];
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const count = (v: unknown): number => (typeof v === 'number' ? v : 0);

/** Reads one summary's text, naming the file when it is not a run's summary. */
export function parseSummary(file: string, text: string): SummaryJson {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new InputError('not a JSON summary (write one with --summary-file or --json)', file);
  }
  if (!isObject(parsed) || typeof parsed.command !== 'string' || parsed.command === 'report') {
    throw new InputError('not the summary of an upload or validate run (write one with --summary-file)', file);
  }
  if (typeof parsed.exitStatus !== 'number') throw new InputError('the summary holds no exitStatus (write it with --summary-file)', file);
  return parsed as SummaryJson;
}

export function mergeSummaries(summaries: { file: string; summary: SummaryJson }[]): Report {
  const shards: ShardReport[] = summaries.map(({ file, summary }) => {
    const delivery = isObject(summary.delivery) ? summary.delivery : {};
    const fatal = isObject(summary.fatal) ? summary.fatal : isObject(delivery.fatal) ? delivery.fatal : undefined;
    return {
      file,
      shard: summary.shard,
      exitStatus: summary.exitStatus ?? EXIT.fatal,
      rows: count(summary.rows),
      ...(count(summary.unread) > 0 ? { unread: count(summary.unread) } : {}),
      requests: summary.command === 'upload' && summary.delivery !== undefined ? count(delivery.requestsSent) : count(summary.requests),
      rejected: count(summary.rejected) + rejectedByServer(delivery),
      rejectsPath: typeof summary.rejectsPath === 'string' ? summary.rejectsPath : undefined,
      fatal: typeof fatal?.message === 'string' ? fatal.message : undefined,
    };
  });
  // a run without --shard beside shards is a split of its own (of 1): its rows are every shard's
  const sharded = shards.some((s) => s.shard !== undefined && s.shard.count > 1);
  const counts = [...new Set(shards.flatMap((s) => (s.shard !== undefined ? [s.shard.count] : sharded && s.exitStatus !== EXIT.usage ? [1] : [])))];
  const n = counts.length === 1 ? counts[0] : 0;
  // a shard is its index of its split: 1/3 and 1/2 are two shards, and neither doubles the other
  const seen = new Map<string, number>();
  for (const s of shards) {
    if (s.shard === undefined) continue;
    const key = `${s.shard.index}/${s.shard.count}`;
    seen.set(key, (seen.get(key) ?? 0) + 1);
  }
  const missingShards = n === 0 ? [] : Array.from({ length: n }, (_, i) => i + 1).filter((k) => !seen.has(`${k}/${n}`));
  const duplicateShards = [...new Set([...seen].filter(([, times]) => times > 1).map(([k]) => Number(k.split('/')[0])))].sort((a, b) => a - b);
  const commands = [...new Set(summaries.map(({ summary }) => String(summary.command)))];
  let exitStatus = shards.reduce((worst, s) => worseStatus(worst, s.exitStatus), EXIT.ok as number);
  // the whole run is not known to be complete: as for a run that stopped on a fatal error
  if (missingShards.length > 0 || duplicateShards.length > 0 || counts.length > 1 || commands.length > 1) exitStatus = worseStatus(exitStatus, EXIT.fatal);
  const total = summaries.reduce<unknown>((sum, { summary }) => addSummaries(sum, summary), undefined) as SummaryJson;
  const rejectsPaths = [...new Set(shards.flatMap((s) => (s.rejectsPath === undefined ? [] : [s.rejectsPath])))];
  return { command: 'report', shards, missingShards, duplicateShards, shardCounts: counts.length > 1 ? counts : [], commands: commands.length > 1 ? commands : [], rejectsPaths, exitStatus, total };
}

function rejectedByServer(delivery: Record<string, unknown>): number {
  const items = isObject(delivery.items) ? delivery.items : {};
  return Object.values(items).reduce<number>((sum, tally) => sum + (isObject(tally) ? count(tally.rejected) : 0), 0);
}

/**
 * The total's rejects file, as the summary's line says it: the one file the summaries name, or the
 * shards' files, each named under its shard above.
 */
export function totalRejectsPath(report: Report): string | undefined {
  if (report.rejectsPaths.length <= 1) return report.rejectsPaths[0];
  return `the ${report.rejectsPaths.length} rejects files named above`;
}

/** The report as a person reads it: each shard, what is missing or doubled, the sum, the verdict. */
export function formatReport(report: Report, formatTotal: (total: SummaryJson) => string): string {
  const lines: string[] = [];
  // summaries of different splits are of no one whole: which shards are missing cannot be told
  const n = report.shardCounts.length > 0 ? undefined : report.shards.find((s) => s.shard !== undefined)?.shard?.count;
  const every = report.shards.length === n && report.missingShards.length === 0 && report.duplicateShards.length === 0 && report.commands.length === 0;
  const of = report.shardCounts.length > 0 ? ', shards of different splits' : n === undefined ? '' : `, ${every ? 'every shard' : 'shards'} of ${n}`;
  lines.push(`report: ${report.shards.length} ${report.shards.length === 1 ? 'summary' : 'summaries'}${of}`);
  for (const s of report.shards) {
    const name = s.shard === undefined ? 'no shard' : `shard ${s.shard.index}/${s.shard.count}`;
    const fatal = s.fatal === undefined ? '' : `: ${s.fatal}`;
    // rows read, as the summary's own line says them (those of files settled whole are not read again)
    const notRead = s.unread === undefined ? '' : ` (${s.unread.toLocaleString('en-US')} not read again)`;
    lines.push(`  ${name.padEnd(12)} exit ${String(s.exitStatus).padEnd(3)} ${(s.rows - (s.unread ?? 0)).toLocaleString('en-US')} rows${notRead}, ${counted(s.requests, 'request')}, ${s.rejected.toLocaleString('en-US')} rejected  ${s.file}${fatal}`);
    if (s.rejectsPath !== undefined) lines.push(`  ${''.padEnd(12)} rejects in ${s.rejectsPath}`);
  }
  if (report.shardCounts.length > 0) lines.push(`shards      the summaries are of different splits (${report.shardCounts.map((c) => (c === 1 ? 'one without --shard' : `of ${c}`)).join(', ')}): no one run's shards, so which are missing cannot be told`);
  if (report.missingShards.length > 0) lines.push(`missing     no summary of shard ${report.missingShards.join(', ')} of ${n}: that part of the run is not known to have run`);
  if (report.duplicateShards.length > 0) lines.push(`doubled     shard ${report.duplicateShards.join(', ')} named by more than one summary`);
  if (report.commands.length > 0) lines.push(`commands    the summaries are of different commands: ${report.commands.join(', ')}`);
  lines.push('');
  // summaries of runs that all stopped before reading their inputs (a usage error) have no total
  if (Array.isArray(report.total.files)) lines.push(formatTotal(report.total).trimEnd());
  else lines.push(`total       none of the summaries is of a run that read its inputs: each stopped before, as it says above`);
  const notWhole = report.missingShards.length + report.duplicateShards.length + report.shardCounts.length + report.commands.length > 0;
  lines.push(`status      ${report.exitStatus} (the worst of the summaries${notWhole ? ', and the run is not whole' : ''})`);
  return `${lines.join('\n')}\n`;
}
