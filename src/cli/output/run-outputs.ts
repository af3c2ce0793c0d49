// Which outputs watch a run, from its flags and environment: NDJSON progress on stderr, the events
// file, GitHub Actions' summary and annotations, the HTML report, the metrics push. Each is loaded
// only when asked for; a run that asks for none loads none of them.
import { stat } from 'node:fs/promises';
import { UsageError } from '../../errors.js';
import { STDIN } from '../../input/source.js';
import type { Shard } from '../../upload/shard.js';
import type { RunFile } from '../../upload/check.js';
import type { SendOptions, UploadOptions } from '../../upload/upload.js';
import { createRunEvents, type RunConsumer, type RunEvents, type StartEvent } from './run-events.js';

export { both } from './run-events.js';

/** The scheme, host and port a URL names (never a path, a query or credentials); the text as given when it is no URL. */
export function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}

/** The flags of the run's outputs (upload and validate; --report and --metrics-push are upload's). */
export interface OutputFlags {
  progress?: 'human' | 'ndjson';
  progressInterval: number;
  events?: string;
  /** --no-ci-output sets it false. */
  ciOutput?: boolean;
  report?: string;
  metricsPush?: string;
  json?: boolean;
  /** --summary-file: the GitHub step output `summary-file` names it. */
  summaryFile?: string;
}

/** The endpoint of an upload's --url, or undefined when it is none (the upload's own check says why). */
async function endpointOf(send: SendOptions | undefined): Promise<URL | undefined> {
  if (send === undefined) return undefined;
  const { resolveEndpoint } = await import('../../transport/endpoint.js');
  try {
    return resolveEndpoint(send.url);
  } catch {
    return undefined;
  }
}

/**
 * The records of an upload (`send`) or a check, as its flags name them or by the names the upload
 * gives them by default (the journal as checkTarget finds it, the rejects file beside the first
 * input; the state's is resolved already): what its other outputs must not be.
 */
async function recordsOf(options: UploadOptions, send?: SendOptions): Promise<RunFile[]> {
  const [{ journalBeside }, { defaultRejectsPath }] = await Promise.all([import('../../upload/journal-name.js'), import('../../upload/rejects-name.js')]);
  const first = options.inputs[0];
  const endpoint = await endpointOf(send);
  const kept = first !== undefined && endpoint !== undefined && !options.inputs.includes(STDIN) && send?.noJournal !== true;
  const journal = send?.journalPath ?? (kept ? await journalBeside(options.inputs, first, endpoint, `${endpoint.origin}${endpoint.pathname}`, options.shard) : undefined);
  const rejects = options.rejectsPath ?? (first === undefined ? undefined : defaultRejectsPath(first, options.rejectsFormat, { shard: options.shard, check: send === undefined }));
  return [
    ['--state', options.delta?.statePath],
    ['--journal', journal],
    ['--map', options.mapFile],
    ['--rejects', rejects],
    // (--out - is standard output)
    ['--out', options.outPath === '-' ? undefined : options.outPath],
  ];
}

/**
 * The files the run writes that its command line names, or it names by default (its records first),
 * and the --events and --report files: checked apart (checkFilesApart) before any is opened, as the
 * events file is emptied as it opens. (--summary-file is checked with them in runAndReport, where a
 * refused one is not written; upload() checks its records again by the names it gives them.)
 */
export async function runFiles(options: UploadOptions, send: SendOptions | undefined, flags: Pick<OutputFlags, 'events' | 'report'>): Promise<RunFile[]> {
  return [...(await recordsOf(options, send)), ['--events', flags.events], ['--report', flags.report]];
}

/** Human progress lines are off: NDJSON takes stderr. */
export const ndjsonProgress = (flags: OutputFlags): boolean => flags.progress === 'ndjson';

/**
 * The flags of the outputs, checked before any of their files is opened (a usage error leaves an
 * earlier events file as it was): --events and --report name files the run writes, never one of its
 * inputs (it would be emptied) nor each other; the report's folder can be written; the gateway's URL
 * is a URL.
 */
async function checkOutputFlags(flags: OutputFlags, inputs: readonly string[]): Promise<void> {
  if (flags.metricsPush !== undefined) (await import('./metrics-push.js')).pushTarget(flags.metricsPush);
  if (flags.events === undefined && flags.report === undefined) return;
  const { checkWritable, isOneOf } = await import('../../upload/check.js');
  for (const [flag, path] of [['--events', flags.events], ['--report', flags.report]] as const) {
    if (path !== undefined && (await isOneOf(path, inputs))) throw new UsageError(`${flag} ${path} is also an input file`);
  }
  if (flags.events !== undefined && flags.report !== undefined && (await isOneOf(flags.events, [flags.report]))) {
    throw new UsageError(`--events and --report name the same file ${flags.report}`);
  }
  // nor the summary file, told before the events file is emptied (the summary's own check comes later)
  if (flags.summaryFile !== undefined) {
    const { checkFilesApart } = await import('../../upload/check.js');
    await checkFilesApart([['--events', flags.events], ['--report', flags.report], ['--summary-file', flags.summaryFile]]);
  }
  if (flags.report !== undefined) await checkWritable('--report', flags.report);
}

/** The outputs the flags and the environment ask for, and the run's events that feed them; undefined when none is asked for. */
export async function openRunOutputs(
  flags: OutputFlags,
  env: NodeJS.ProcessEnv,
  start: Omit<StartEvent, 'type' | 'time' | 'inputs'> & { inputs: readonly string[] },
  names: { shard?: Shard } = {},
): Promise<RunEvents | undefined> {
  const ndjson = ndjsonProgress(flags);
  const github = env.GITHUB_ACTIONS === 'true' && flags.ciOutput !== false;
  if (!ndjson && flags.events === undefined && !github && flags.report === undefined && flags.metricsPush === undefined) return undefined;
  await checkOutputFlags(flags, start.inputs);
  const every = flags.progressInterval;
  const consumers: RunConsumer[] = [];
  let events: RunEvents | undefined;
  const warn = (message: string): void => events?.warn(message);
  if (ndjson) consumers.push((await import('./ndjson-events.js')).ndjsonEvents((line) => process.stderr.write(line), every));
  else consumers.push({ event: (e) => e.type === 'warning' && process.stderr.write(`track: warning: ${e.message}\n`) });
  if (flags.events !== undefined) consumers.push((await import('./ndjson-events.js')).eventsFile(flags.events, every, warn));
  if (flags.report !== undefined) consumers.push((await import('./report.js')).htmlReport(flags.report));
  if (flags.metricsPush !== undefined) consumers.push((await import('./metrics-push.js')).metricsPush(flags.metricsPush, every, warn, names.shard));
  if (github) {
    // the runner reads annotations on stdout and stderr: on the one that carries no JSON (--json: the
    // summary alone on stdout; --progress ndjson: only events on stderr), none when both do
    const stream = flags.json !== true ? process.stdout : ndjson ? undefined : process.stderr;
    const annotate = stream === undefined ? undefined : (line: string): void => void stream.write(`${line}\n`);
    const { githubActions } = await import('./github-actions.js');
    consumers.push(
      githubActions(
        start.command,
        { summaryPath: env.GITHUB_STEP_SUMMARY || undefined, outputPath: env.GITHUB_OUTPUT || undefined, workspace: env.GITHUB_WORKSPACE || undefined, runnerTemp: env.RUNNER_TEMP || undefined, summaryFile: flags.summaryFile },
        { annotate, warn },
      ),
    );
  }
  const inputs = await Promise.all(
    start.inputs.map(async (file) => ({ file, bytes: file === STDIN ? null : await stat(file).then((s) => s.size, () => null) })),
  );
  const totalBytes = inputs.reduce((sum, input) => sum + (input.bytes ?? 0), 0);
  events = createRunEvents(consumers, { totalBytes, errorsAsEvents: ndjson });
  events.start({ ...start, inputs });
  return events;
}
