// The one place that maps errors and run summaries to exit statuses, and errors to messages: the
// program's top-level catch, and the edges of every upload or dry run (Ctrl-C, its summary).
import { CommanderError, type Command } from 'commander';
import { closeSync, openSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { isatty } from 'node:tty';
import { DeliveryError, InputError, isMistake, UsageError, StoppedError } from '../errors.js';
import type { UploadOptions, UploadSummary } from '../upload/upload.js';
import type { RunEnding } from './output/run-events.js';
import { refusedItems } from './output/figures.js';
import type { Pace } from './output/summary.js';
import { dropHeldSignal, holdStopSignals, INTERRUPTED, isEcho, releaseHeldSignal, STOP_SIGNALS, takeHeldSignal } from './held-signals.js';

/** `noProfile`: `track inspect` was given an identifier that matches no profile. */
export const EXIT = { ok: 0, rejected: 1, noProfile: 1, usage: 2, fatal: 3, interrupted: INTERRUPTED } as const;

/** A person's mistake (a usage or input error) is 2; anything else that stops a run is 3. */
export function exitCodeFor(error: unknown): number {
  if (isMistake(error)) return EXIT.usage;
  if (error instanceof StoppedError) return EXIT.interrupted;
  if (error instanceof DeliveryError) return EXIT.fatal;
  return EXIT.fatal;
}

/**
 * The status of a run that returned its summary: a fatal error is 2 only when it is the person's to
 * fix and nothing reached the server (3 once anything was sent, whatever its cause); then a stop
 * (130), rejected rows or dropped fields (1), or 0.
 */
export function exitCodeOfRun(summary: UploadSummary): number {
  const d = summary.delivery;
  const fatal = d?.fatal ?? summary.fatal;
  if (fatal !== undefined) return (d?.attempts ?? 0) > 0 ? EXIT.fatal : exitCodeFor(fatal);
  if (summary.interrupted || d?.stopped === true || d?.aborted === true) return EXIT.interrupted;
  // a field left out of its row (--drop-invalid-fields) waits in the rejects file to be fixed, as a row does
  const rejected = summary.rejected + summary.droppedFields + refusedItems(d);
  return rejected > 0 ? EXIT.rejected : EXIT.ok;
}

/** The files the run's outputs write beside its records: upload() checks that none is one of them. */
function otherOutputs(flags: { summaryFile?: string; events?: string; report?: string }): Array<{ flag: string; path: string }> {
  const named = [['--summary-file', flags.summaryFile], ['--events', flags.events], ['--report', flags.report]] as const;
  return named.flatMap(([flag, path]) => (path === undefined ? [] : [{ flag, path }]));
}

/** --summary-file names a file that can be written, none of the inputs, and none of the run's other files (runFiles). */
async function checkSummaryFile(path: string, options: UploadOptions, flags: { events?: string; report?: string }): Promise<void> {
  const { checkFilesApart, checkWritable, isOneOf } = await import('../upload/check.js');
  try {
    if (await isOneOf(path, options.inputs)) throw new UsageError(`--summary-file ${path} is also an input file`);
    const { runFiles } = await import('./output/run-outputs.js');
    await checkFilesApart([...(await runFiles(options, options.send, flags)), ['--summary-file', path]]);
    await checkWritable('--summary-file', path);
    // standard output and devices (/dev/stdout, a link to one) are written to as they are: what
    // /dev/stdout names may be the file a shell sent the run's output to
    const { isStream, linkTarget } = await import('../file-folder.js');
    const target = linkTarget(path);
    if (isStream(target) || !(await isRegularFile(path))) return;
    // it is made beside the file it replaces (through a link, the file the link names), then renamed over it
    const folderProblem = await replacedFolderProblem(path, target);
    if (folderProblem !== undefined) throw new UsageError(`cannot write --summary-file ${path}: ${folderProblem}`);
    // an earlier run's summary goes now: a run killed before it writes its own (kill -9, out of
    // memory) leaves none, which `track report` names as missing, rather than one that is not its own
    // (through a link, the file it names, never the link)
    try {
      await (await import('node:fs/promises')).unlink(target);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      // (a folder that keeps others' files, as /tmp does, lets no one else remove them)
      if (code !== 'ENOENT') throw new UsageError(`cannot write --summary-file ${path}: the summary of an earlier run there cannot be replaced (${code ?? String(error)}); give a path of your own`);
    }
  } catch (error) {
    summaryFileWritten = true;
    throw error;
  }
}

/**
 * Calls `first` on the first SIGINT, SIGTERM or SIGHUP and `second` on the next SIGINT or SIGTERM
 * (default: exit 130 at once); a signal held since the process began (held-signals.ts) is the first,
 * taken at once. A SIGHUP after the first is not a second: a closed terminal's shell and its kernel
 * may each send one, and nobody is there to insist. From the second on, the handlers are gone: a
 * third signal ends the process as the system ends one (an exit waits for the file system's threads,
 * and one opening a named pipe nobody reads never returns). Returns the function that removes them.
 */
export function onStopSignals(first: (signal: string) => void, second: (signal: string) => void = () => process.exit(EXIT.interrupted)): () => void {
  let signals = 0;
  let firstSignal: NodeJS.Signals | undefined;
  let firstAt = 0;
  const remove = (): void => {
    for (const signal of STOP_SIGNALS) process.off(signal, listener);
  };
  const onSignal = (signal: NodeJS.Signals, at = performance.now()): void => {
    if (signals > 0 && signal === 'SIGHUP') return;
    // the first told twice (`timeout` signals its command, then its process group) is not a second
    if (signals === 1 && isEcho(signal, firstSignal, firstAt)) return;
    signals += 1;
    if (signals === 1) {
      firstSignal = signal;
      firstAt = at;
      return first(signal);
    }
    remove();
    second(signal);
  };
  const listener = (signal: NodeJS.Signals): void => onSignal(signal);
  for (const signal of STOP_SIGNALS) process.on(signal, listener);
  const held = takeHeldSignal();
  if (held !== undefined) onSignal(held.signal, held.at);
  return remove;
}

/**
 * Runs upload() with standard input and the stop signals in place (`stop` on the first Ctrl-C,
 * `abort` on the second, default: exit at once), then prints its summary, reports an error that
 * stopped it, and sets the exit status.
 */
export async function runAndReport(
  verb: string,
  flags: { json?: boolean; summaryFile?: string; events?: string; report?: string },
  run: {
    options: UploadOptions;
    /** A dry run's pace, for the estimate of how long sending would take. */
    pace?: Pace;
    stop: (signal: string) => void;
    abort?: (signal: string) => void;
    /** Once upload() is over, before the summary: the progress output stops. */
    ended: () => void;
    /** More to put in the JSON summary (validate's --preview). */
    extra?: Record<string, unknown>;
    /** What names this run among others, after the counts of its JSON summary (its shard). */
    names?: Record<string, unknown>;
    /** The run's outputs (NDJSON progress, CI, report, metrics): told of its end or of the error that stopped it. */
    outputs?: RunEnding;
  },
): Promise<void> {
  const [{ upload }, { failureJson, formatSummary, reportFatal, summaryObject }] = await Promise.all([import('../upload/upload.js'), import('./output/summary.js')]);
  const removeSignals = onStopSignals(run.stop, run.abort);
  const more = { ...run.names, limits: run.options.limits };
  let summary: UploadSummary;
  try {
    // a summary file that cannot be written, or that is an input, is told before anything is sent (and
    // not written then: it may be an input)
    if (flags.summaryFile !== undefined) await checkSummaryFile(flags.summaryFile, run.options, flags);
    summary = await upload({ ...run.options, otherOutputs: otherOutputs(flags), stdin: run.options.stdin ?? process.stdin });
  } catch (error) {
    // a run that stopped before its summary still leaves one for the scheduler (and, with --json, for
    // the script reading standard output), then fails as it would; never in place of a record of the run
    const failure = failureJson(verb, error, { exitStatus: exitCodeFor(error), ...more });
    const { clashesWith } = await import('../upload/check.js');
    if (clashesWith(error, '--summary-file')) summaryFileWritten = true;
    if (flags.summaryFile !== undefined && !summaryFileWritten) await writeSummaryFile(flags.summaryFile, failure);
    if (flags.json === true) printSummary(failure, run.options.outPath === '-');
    // (an output written over a record of the run is not written at all: the report, the events)
    if (run.outputs === undefined || !(error instanceof Error) || clashesWith(error, '--events') || clashesWith(error, '--report')) throw error;
    await run.outputs.failed(error, exitCodeFor(error));
    if (!run.outputs.errorsAsEvents) throw error;
    process.exitCode = exitCodeFor(error);
    return;
  } finally {
    run.ended();
    removeSignals();
  }
  let exitStatus = exitCodeOfRun(summary);
  const json = summaryObject(verb, { ...summary, ...run.extra }, run.pace, { exitStatus, ...more });
  const text = `${JSON.stringify(json)}\n`;
  if (flags.summaryFile !== undefined && !(await writeSummaryFile(flags.summaryFile, text))) exitStatus = Math.max(exitStatus, EXIT.fatal);
  if (flags.json === true) printSummary(text, run.options.outPath === '-');
  else (run.options.outPath === '-' ? process.stderr : process.stdout).write(formatSummary(verb, summary, run.options.limits, run.pace));
  const fatal = summary.delivery?.fatal ?? summary.fatal;
  if (fatal !== undefined && run.outputs?.errorsAsEvents !== true) reportFatal(fatal);
  process.exitCode = exitStatus;
  await run.outputs?.end(json, exitStatus);
}

/** This process wrote (or tried to write) its --summary-file. */
let summaryFileWritten = false;
/** This process printed its --json summary, or the failure that stands for it. */
let summaryPrinted = false;

/** With --json: the summary, once, on standard output (on stderr with --out -: stdout carries the request bodies alone). */
function printSummary(json: string, outToStdout: boolean): void {
  if (summaryPrinted) return;
  summaryPrinted = true;
  (outToStdout ? process.stderr : process.stdout).write(json);
}

/** Where an upload or validate command line sends its summary: --summary-file, --json, --out -. */
interface SummaryWords {
  verb: string;
  path?: string;
  /** The files other flags name (--state, --journal, --map, --rejects, --out, --events, --report): the summary is never written over one. */
  others: string[];
  json: boolean;
  outToStdout: boolean;
}

/** The flags that name the files of a run's records and other outputs, and the --map file it reads. */
const RECORD_FLAGS = ['--state', '--journal', '--map', '--rejects', '--out', '--events', '--report'];

/**
 * The summary's places in an upload or validate command line, read from its words: a usage error in
 * the flags (a bad --shard, a missing --url) stops the run before they are all parsed, and still
 * leaves a summary for the scheduler, and one JSON object on standard output with --json.
 */
function summaryWordsIn(argv: string[]): SummaryWords | undefined {
  const [verb, ...words] = argv.slice(2);
  if (verb !== 'upload' && verb !== 'validate') return undefined;
  const found: SummaryWords = { verb, json: false, outToStdout: false, others: [] };
  for (const [i, word] of words.entries()) {
    if (word === '--') break;
    const flag = RECORD_FLAGS.find((name) => word === name || word.startsWith(`${name}=`));
    if (flag !== undefined) {
      const path = word === flag ? words[i + 1] : word.slice(flag.length + 1);
      if (path !== undefined) found.others.push(path);
    }
    if (word === '--summary-file' && words[i + 1] !== undefined) found.path ??= words[i + 1];
    else if (word.startsWith('--summary-file=')) found.path ??= word.slice('--summary-file='.length);
    else if (word === '--json') found.json = true;
    else if ((word === '--out' && words[i + 1] === '-') || word === '--out=-') found.outToStdout = true;
  }
  // `--summary-file -` is refused (fileFlag): no file named - is written for it
  if (found.path === '-') found.path = undefined;
  return found;
}

/** A run stopped by an error before runAndReport gave its summary: gives it now (a stop before the run began). */
async function summaryOfEarlyStop(argv: string[], error: unknown, exitStatus: number): Promise<void> {
  const named = summaryWordsIn(argv);
  if (named === undefined || exitStatus === EXIT.ok) return;
  // never in place of a record of the run
  if (named.path !== undefined) {
    const { clashesWith, isOneOf } = await import('../upload/check.js');
    if (clashesWith(error, '--summary-file')) summaryFileWritten = true;
    else if (await isOneOf(named.path, named.others)) {
      summaryFileWritten = true;
      process.stderr.write(`track: --summary-file ${named.path}: not written: another file of the run is named so\n`);
    }
  }
  if ((named.path === undefined || summaryFileWritten) && (!named.json || summaryPrinted)) return;
  const { failureJson } = await import('./output/summary.js');
  const json = failureJson(named.verb, error, { exitStatus });
  if (named.path !== undefined && !summaryFileWritten) await writeSummaryFile(named.path, json);
  if (named.json) printSummary(json, named.outToStdout);
}

/** Whether `path` is a regular file (through a link), not a device, a pipe or nothing. */
async function isRegularFile(path: string): Promise<boolean> {
  const { stat } = await import('node:fs/promises');
  return (await stat(path).catch(() => undefined))?.isFile() === true;
}

/** Why a summary cannot replace the file at `path`, `target` through its links (its folder takes no new file), or undefined. */
async function replacedFolderProblem(path: string, target: string): Promise<string | undefined> {
  const { access, constants } = await import('node:fs/promises');
  const folder = dirname(target);
  try {
    await access(folder, constants.W_OK | constants.X_OK);
    return undefined;
  } catch (error) {
    const through = target === path ? '' : `it links to ${target}, and `;
    return `${through}the summary is written beside it, then put in its place, and the folder ${folder} takes no new file (${(error as NodeJS.ErrnoException).code ?? String(error)}); give a path in a folder you can write in`;
  }
}

/**
 * Writes --summary-file whole or not at all (a scheduler never reads half of one): to a file beside
 * it, then renamed over it (over the file a link there names: the link stays); to a device, a pipe
 * or standard output there (/dev/stdout, /dev/null, a link to one), written to, never replaced.
 * False, with the reason on stderr, when it cannot be written.
 */
async function writeSummaryFile(path: string, json: string): Promise<boolean> {
  summaryFileWritten = true;
  // a run stopped before its checks (an option mistyped) has not compared the file with its records
  const record = await (await import('../upload/check.js')).recordIn(path);
  if (record !== undefined) {
    process.stderr.write(`track: --summary-file ${path}: not written: it is ${record}\n`);
    return false;
  }
  const { appendFile, rename, stat, writeFile, rm } = await import('node:fs/promises');
  // a link there is written through: the file it names is replaced, the link stays
  const { descriptorOf, isStream, linkTarget, ownDescriptorProblem } = await import('../file-folder.js');
  const target = linkTarget(path);
  const partial = `${target}.${process.pid}.partial`;
  // (told here too: a run that stopped before its checks writes its summary all the same)
  const own = ownDescriptorProblem(target);
  if (own !== undefined) {
    process.stderr.write(`track: --summary-file ${path}: not written: it names ${own}\n`);
    return false;
  }
  try {
    // standard output (/dev/stdout, a link to it) gets the summary after what the run wrote there, as a
    // device or a pipe does: through this process's own descriptor, whose place in a file the run's
    // later lines go on from (a descriptor opened anew would be written over by them)
    if (isStream(target)) {
      const fd = descriptorOf(target);
      if (fd === undefined) await appendFile(target, json);
      else writeSync(fd, json);
      return true;
    }
    if ((await stat(target).catch(() => undefined))?.isFile() === false) {
      await writeFile(target, json);
      return true;
    }
    await writeFile(partial, json);
    await rename(partial, target);
    return true;
  } catch (error) {
    await rm(partial, { force: true });
    process.stderr.write(`track: --summary-file ${path}: cannot be written (${error instanceof Error ? error.message : String(error)})\n`);
    return false;
  }
}

let quiet = false;

/** What writing to an output nobody reads any more fails with: a pipe closed (EPIPE), a terminal hung up (EIO). */
const CLOSED_OUTPUT = new Set(['EPIPE', 'EIO', 'ERR_STREAM_DESTROYED']);

/**
 * Output to a pipe its reader closed early (`track upload --help | head -1`, `--json | head`), or to
 * a terminal that hung up (closed, its SSH session dropped), is left unwritten, quietly: the run still
 * ends as it would have (its rejects file, journal and summary file written) and with its own exit
 * status, not a stack trace. Set before anything is written, for every command.
 */
export function quietOnClosedOutput(): void {
  if (quiet) return;
  quiet = true;
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (!CLOSED_OUTPUT.has(error.code ?? '')) throw error;
    });
  }
}

/**
 * Node sets a terminal back as it found it when the process exits, and on Node 20 aborts (SIGABRT, a
 * core dump) when it cannot: after a hangup the terminal is gone (EIO). A standard stream that was a
 * terminal and no longer is (it hung up) is pointed at /dev/null as the process exits, which node then
 * leaves alone: the run ends with its own status (130 for a stopped one).
 */
function leaveHungUpTerminal(): void {
  const terminals = [0, 1, 2].filter((fd) => isatty(fd));
  if (terminals.length === 0) return;
  process.once('exit', () => {
    for (const fd of terminals) {
      if (isatty(fd)) continue;
      try {
        closeSync(fd);
        // takes the lowest descriptor free: the one just closed
        openSync('/dev/null', fd === 0 ? 'r' : 'w');
      } catch {
        // it stays closed, which node leaves alone too
      }
    }
  });
}

function overrideExits(command: Command): void {
  command.exitOverride();
  for (const sub of command.commands) overrideExits(sub);
}

/** The command that ran was given --progress ndjson. */
const progressEvents = (program: Command): boolean => program.commands.some((command) => command.opts().progress === 'ndjson');

/** The commands that take a stop signal (an upload's or a dry run's stop, the emulator's): any other is ended by one held for it. */
const TAKES_STOPS = new Set(['upload', 'validate', 'emulate']);

/** A signal held since the process began goes to the command that runs, if it takes stops (held-signals.ts). */
function handOnHeldSignal(program: Command): void {
  holdStopSignals();
  program.hook('preAction', (_program, action) => {
    let command = action;
    while (command.parent !== null && command.parent !== program) command = command.parent;
    if (!TAKES_STOPS.has(command.name())) releaseHeldSignal();
  });
}

export async function runMain(program: Command, argv: string[]): Promise<void> {
  quietOnClosedOutput();
  leaveHungUpTerminal();
  overrideExits(program);
  handOnHeldSignal(program);
  try {
    await program.parseAsync(argv);
  } catch (error) {
    if (!(error instanceof CommanderError)) await summaryOfEarlyStop(argv, error, exitCodeFor(error));
    if (error instanceof CommanderError) {
      // commander has already printed its message (or help/version, which exit 0)
      process.exitCode = error.exitCode === 0 ? 0 : EXIT.usage;
      await summaryOfEarlyStop(argv, error, process.exitCode);
      return;
    }
    if (error instanceof Error && progressEvents(program)) {
      // --progress ndjson: stderr holds events only, this error (found before the run's outputs were open) too
      const { errorEvent } = await import('./output/run-events.js');
      process.stderr.write(`${JSON.stringify(errorEvent(error, exitCodeFor(error)))}\n`);
      process.exitCode = exitCodeFor(error);
      return;
    }
    const message = error instanceof Error ? error.message : String(error);
    const known = error instanceof UsageError || error instanceof InputError || error instanceof DeliveryError;
    process.stderr.write(`track: ${message}\n`);
    if (!known && error instanceof Error && error.stack && process.env.TRACK_DEBUG) process.stderr.write(`${error.stack}\n`);
    process.exitCode = exitCodeFor(error);
  } finally {
    dropHeldSignal();
  }
}
