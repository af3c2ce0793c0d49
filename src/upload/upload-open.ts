// An upload after its target and journal are checked, up to its requests: the rest of its checks
// (checkRun), the delta state (openRunState), and the files it writes as it goes (openRecords). What
// follows is upload-run.ts.
import { UsageError } from '../errors.js';
import { checkFormat, checkReadable, STDIN } from '../input/source.js';
import type { ColumnMap } from '../mapping/column-map.js';
import { findJournal, inputKey, isWhole, openJournal, type Journal } from '../records/journal.js';
import { lineLedger } from '../records/line-ledger.js';
import type { StateWriter } from '../records/state.js';
import { targetOf } from '../transport/endpoint.js';
import { checkFilesApart, checkHeaders, checkWritable, isOneOf, readColumnMap } from './check.js';
import { checkOutputs, checkRejectsFormat, outWriter, rejectsLedger, rejectsSoFar, rejectsWriter } from './outputs.js';
import { rejectsFileOf } from './rejects-name.js';
import type { Target } from './rerun.js';
import type { sharedPace } from './shared-pace.js';
import type { DeltaRun, UploadOptions } from './upload-options.js';
import type { StartedWorker } from '../started-worker.js';
import type { RemoteInputs } from '../input/remote.js';

/** A run's inputs as resolved (s3:// prefixes and globs become the objects they name), and when it began. */
export type ResolvedRun = {
  started: number;
  named: readonly string[];
  inputs: string[];
  remote?: RemoteInputs;
  planner: StartedWorker | undefined;
  /** The state writer's thread, started ahead for a delivery with a state. */
  stateWriter?: StartedWorker;
};

/** What the run's checks found, for the steps after. */
export interface CheckedRun {
  /** The target whose state a --delta run compares with (a dry run's is its --url). */
  deltaTarget: string | undefined;
  map: ColumnMap | undefined;
  rejectsPath: string;
  rejectsNote: string | undefined;
  journalNote: string | undefined;
  /** The columns a map names that no file has: standard input's header must have them. */
  mapColumnsOfStdin: string[];
  /** The budget shared with other processes (--rate-store). */
  pace: Awaited<ReturnType<typeof sharedPace>> | undefined;
}

/** 1. Checks everything a person can get wrong, before any file is written or anything sent. */
export async function checkRun(options: UploadOptions, run: ResolvedRun, target: Target | undefined, key: string | undefined): Promise<CheckedRun> {
  const { send, delta } = options;
  const { named, inputs, remote } = run;
  const deltaTarget = delta === undefined ? undefined : (target?.target ?? dryRunTarget(delta));
  if (inputs.length === 0) throw new UsageError('give at least one input file (or - for standard input)');
  if (inputs.filter((file) => file === STDIN).length > 1) throw new UsageError('standard input (-) can be read only once');
  for (const file of inputs) if ((await checkFormat(file, options.format)) === 'parquet' && file === STDIN) throw new UsageError('Parquet cannot be read from standard input (-): it is read from its end; give the file');
  checkRejectsFormat({ ...options, inputs });
  for (const file of inputs) await checkReadable(file);
  const map = options.mapFile !== undefined ? await readColumnMap(options.mapFile) : options.map;
  // a check's own, a shard's own, each input's own (rejects-name.ts); a resumed run's may be an earlier version's
  const naming = { shard: options.shard, check: send === undefined, resume: target?.resume === true };
  const { path: rejectsPath, note: rejectsNote } = options.rejectsPath === undefined ? await rejectsFileOf(named, inputs, options.rejectsFormat, naming) : { path: options.rejectsPath };
  await checkOutputs(inputs, rejectsPath, options.outPath);
  if (delta !== undefined && (await isOneOf(delta.statePath, inputs))) throw new UsageError(`--state ${delta.statePath} is also an input file`);
  // the records by the names the run gives them (its defaults resolved), then the outputs the command writes besides
  const others = (options.otherOutputs ?? []).map(({ flag, path }) => [flag, path] as const);
  await checkFilesApart([['--state', delta?.statePath], ['--journal', target?.journalPath], ['--map', options.mapFile], ['--rejects', rejectsPath], ['--out', options.outPath], ...others]);
  if (delta !== undefined && send !== undefined) await checkWritable('--state', delta.statePath);
  const notAFile = delta === undefined ? undefined : (await import('../file-folder.js')).notAFileProblem(delta.statePath);
  if (notAFile !== undefined) throw new UsageError(`--state ${delta!.statePath}: ${notAFile}`);
  // a resumed run does not read again what an earlier one settled whole
  const earlier = target?.resume === true && target.journalPath !== undefined ? await findJournal(target.journalPath).catch(() => undefined) : undefined;
  // the rows a run under another key settled went to its workspace, which may not be this one's
  if (earlier?.key !== undefined && earlier.key !== key && target?.journalPath !== undefined) {
    (await import('./state-names.js')).checkResumeKey(target.journalPath, earlier, target.target, key!, delta?.statePath);
  }
  // one of an earlier version names no key: it is tied to this run's (openJournal), which says so
  const journalNote = earlier !== undefined && earlier.key === undefined && key !== undefined ? (await import('./state-names.js')).keylessJournalNote(target!.journalPath!, key) : undefined;
  const whole = new Set(earlier?.files.filter(isWhole).map((f) => f.identity.path));
  const mapColumnsOfStdin = await checkHeaders({ ...options, inputs, remote }, map, whole.size === 0 ? undefined : new Set(inputs.filter((file) => whole.has(inputKey(file)))));
  if (target?.resume === true && options.rejectsFormat === 'csv') await (await import('./csv-rejects.js')).checkRejectsHeader(rejectsPath, { ...options, inputs, remote, map });
  // the shared budget answers before anything is written or sent (an unreachable store is a usage error)
  const pace = send === undefined || target === undefined ? undefined : await (await import('./shared-pace.js')).sharedPace(send, target.target, options.shard, options.stopSignal);
  return { deltaTarget, map, rejectsPath, rejectsNote, journalNote, mapColumnsOfStdin, pace };
}

/** The target whose state a dry run reads: its --url, without which there is no state to compare with. */
function dryRunTarget(delta: DeltaRun): string {
  if (delta.url === undefined) throw new UsageError('--delta and --dedupe-events compare with what a target acknowledged: give its --url (or TRACK_URL)');
  return targetOf(delta.url);
}

/** The delta state as the run uses it. */
export interface RunState {
  /** What a delivery writes to it (none in a dry run, which only reads it in the plan). */
  writer: StateWriter | undefined;
  /** The state knows the target already: a --delta run then mostly leaves rows out. */
  known: boolean;
  /** Said when the state knows nothing of the target but knows its host under another name; and when a dry run's key is not one the state learned the target through. */
  notes: string[];
}

/**
 * The state learns from a delivery's acknowledgements, holding the file for the whole run (a second
 * run on it is refused); a dry run only reads it (in the plan). A state file that cannot be used is
 * a usage error before anything is written.
 */
export async function openRunState(options: UploadOptions, deltaTarget: string | undefined, key: string | undefined, ahead?: StartedWorker): Promise<RunState> {
  const { send, delta } = options;
  if (delta === undefined || deltaTarget === undefined) return { writer: undefined, known: false, notes: [] };
  const { openStateWriter, stateKnows } = await import('../records/state.js');
  // the state knows each target under the keys it learned it through: a delivery under another is refused before anything is sent
  const writer = send === undefined ? undefined : await openStateWriter(delta.statePath, deltaTarget, key, ahead);
  try {
    const known = stateKnows(delta.statePath, deltaTarget);
    const { otherKeyNote, otherNameNote } = await import('./state-names.js');
    const { adoptedMessage } = await import('../records/state-keys.js');
    const notes = [
      known ? undefined : otherNameNote(delta.statePath, deltaTarget),
      send === undefined && key !== undefined ? otherKeyNote(delta.statePath, deltaTarget, key, known) : undefined,
      writer?.adopted === true ? adoptedMessage(delta.statePath, deltaTarget, key!, true) : undefined,
    ];
    return { writer, known, notes: notes.filter((note) => note !== undefined) };
  } catch (error) {
    await writer?.close().catch(() => undefined);
    throw error;
  }
}

/** The files the run writes as it goes, and what it counts of their rows. */
export interface RunRecords {
  resume: boolean;
  rejects: ReturnType<typeof rejectsWriter>;
  out: ReturnType<typeof outWriter> | undefined;
  journal: Journal | undefined;
  /** The rows a delivery settles (journal or not): those read and not settled are what a stop leaves. */
  ledger: ReturnType<typeof lineLedger> | undefined;
  /** The rejects file's rows a resumed run found there (not written again). */
  written: Set<string>;
  rejected: ReturnType<typeof rejectsLedger>;
  /** Rejects the run before could not write, written now from its journal. */
  owed: number;
}

/** 2. The rejects file and --out open with their first line; the journal after the rejects file. */
export async function openRecords(options: UploadOptions, run: ResolvedRun, target: Target | undefined, key: string | undefined, checked: CheckedRun, state: StateWriter | undefined): Promise<RunRecords> {
  const { delta } = options;
  const { inputs, remote } = run;
  const resume = target?.resume === true;
  const rejects = rejectsWriter(checked.rejectsPath, resume, { ...options, inputs, remote, map: checked.map });
  const out = options.outPath === undefined ? undefined : outWriter(options.outPath);
  // (the journal syncs the rejects file before it records rows settled: made just below)
  let rejected: ReturnType<typeof rejectsLedger> | undefined;
  let journal: Journal | undefined;
  if (target?.journalPath !== undefined) {
    // what the state remembers of this run's sends: a later run may then leave them out (the re-run guard)
    const remembers = delta === undefined ? [] : [...(delta.attributes ? ['attributes'] : []), ...(delta.activities ? ['activities'] : [])];
    const restart = target.restart === true;
    try {
      const shard = options.shard === undefined ? undefined : `${options.shard.index}/${options.shard.count}`;
      journal = await openJournal({ path: target.journalPath, files: inputs, remote: remote?.objects, target: target.target, key, shard, resume, restart, remembers, beforeSettling: () => rejected!.settle() });
      await (await import('./rerun.js')).noteJournal(target.journalPath, target.target, inputs);
    } catch (error) {
      // the state file is given back to the next run
      await state?.close().catch(() => undefined);
      throw error;
    }
  }
  const ledger = journal === undefined && options.send === undefined ? undefined : lineLedger(journal);
  // a resumed run adds to its rejects file, and does not write again a row it holds; it first writes
  // the rejects the run before could not (its journal carried them)
  const written = resume ? await rejectsSoFar(checked.rejectsPath, options.rejectsFormat) : new Set<string>();
  rejected = rejectsLedger(rejects, written, journal !== undefined);
  const owed = journal === undefined || journal.owed.length === 0 ? 0 : await rejected.writeOwed(journal.owed);
  return { resume, rejects, out, journal, ledger, written, rejected, owed };
}

