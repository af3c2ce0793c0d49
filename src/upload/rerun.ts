// The journal of a run to a target, and the guard on running again an upload a journal holds: the
// same files, unchanged, to the same target are refused unless --resume or --restart says what to
// do, wherever that journal lies (beside the inputs, under another name, or noted in their folder).
// Where it lies is journal-name.ts's, the shard it holds rerun-shard.ts's. Over 350 lines: each
// refusal here tells the journal's story (journalStory) and the ways on in the same words.
import { appendFile, readFile, readdir, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { UsageError } from '../errors.js';
import { checkReadable, STDIN } from '../input/source.js';
import { resolveEndpoint } from '../transport/endpoint.js';
import { findJournal, identifyFile, inputKey, rowsInDoubt, sameIdentity, touchedFiles, type ParsedJournal } from '../records/journal.js';
import { changedMessage } from '../records/journal-read.js';
import { lockJournal } from '../records/journal-lock.js';
import type { RemoteIdentities } from '../records/journal-read.js';
import { checkFilesApart, checkWritable, isOneOf } from './check.js';
import { journalBeside, journalSuffix, localFiles, readableJournal, splitOf } from './journal-name.js';
import { checkShard } from './rerun-shard.js';
import type { Shard } from './shard.js';

const count = (n: number): string => n.toLocaleString('en-US');
const when = (iso: string): string => iso.replace('T', ' ').replace(/:\d\d(\.\d+)?Z$/, ' UTC');

/** What an earlier run's journal holds, in a sentence. */
function journalStory(found: ParsedJournal): string {
  const settled = found.files.reduce((n, f) => n + f.settled.size, 0);
  const total = found.files.every((f) => f.rows !== undefined) ? found.files.reduce((n, f) => n + (f.rows ?? 0), 0) : undefined;
  const of = total === undefined ? `${count(settled)} rows settled` : `${count(settled)} of ${count(total)} rows settled`;
  if (found.end?.complete === true) return `completed on ${when(found.end.at)} (${of})`;
  if (found.end !== undefined) return `was stopped on ${when(found.end.at)} with ${of}`;
  const inFlight = found.files.reduce((n, f) => n + rowsInDoubt(f).size, 0);
  return `was interrupted (killed or crashed) with ${of}${inFlight > 0 ? ` and ${count(inFlight)} in flight` : ''}`;
}

/**
 * Whether a journal's runs posted nothing that may have been applied: each request they sent was
 * refused unapplied (a mistyped API key's 401), or none was sent. Rows settled unsent (refused before
 * sending) went to no workspace.
 */
export const sentNothing = (found: ParsedJournal): boolean => found.files.every((f) => f.sent.size === 0);

/** The journal's run was under another API key (fingerprints) than this run's, and may have delivered rows to that key's workspace. */
const otherKeys = (found: ParsedJournal, key: string | undefined): key is string =>
  key !== undefined && found.key !== undefined && found.key !== key && !sentNothing(found);

/**
 * Refuses a run that would send again rows a journal of this target holds as sent (the same files,
 * unchanged): the run's own journal, or another one beside the inputs (the files given in another
 * order or with others), unless --resume or --restart says what to do. Returns a note when it
 * replaces a journal of other inputs.
 */
async function checkRerun(
  journalPath: string,
  target: string,
  inputs: readonly string[],
  options: { resume?: boolean; restart?: boolean; journalPath?: string; rerunSafe?: RerunSafe; remote?: RemoteIdentities; contents?: InputContents; delta?: boolean; shard?: Shard; key?: string },
): Promise<string | undefined> {
  if (options.resume === true || options.restart === true) return undefined;
  let own: ParsedJournal | undefined;
  if ((await stat(journalPath).catch(() => undefined)) !== undefined) {
    try {
      own = await findJournal(journalPath);
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
  }
  if (own?.target !== undefined && own.target !== target && touchedFiles(own).length > 0) {
    throw new UsageError(
      `the journal ${journalPath} holds an upload to ${own.target}, not to ${target}; give another --journal (or none: each target keeps its own), or --restart to replace it`,
    );
  }
  const identities = await Promise.all(inputs.map((file) => identifyFile(file, options.remote)));
  const endpoint = new URL(target);
  const same = (a: { path: string; size: number; mtimeMs: number }, b: typeof a): boolean => a.path === b.path && a.size === b.size && a.mtimeMs === b.mtimeMs;
  /** The inputs of which this journal holds rows sent or settled to this target. */
  const overlap = (found: ParsedJournal): string[] =>
    found.target !== undefined && found.target !== target
      ? []
      : inputs.filter((_, i) => touchedFiles(found).some((f) => same(f.identity, identities[i])));
  const refuse = async (path: string, found: ParsedJournal, files: string[]): Promise<string | undefined> => {
    // asked only when a journal would refuse the run
    if (options.rerunSafe !== undefined && (await options.rerunSafe(found))) {
      const own = path === journalPath ? `the journal ${path}` : `a journal of the same files (${path}) is left as it is, and ${journalPath}`;
      return `an upload of ${files.join(', ')} to ${target} ${journalStory(found)}; this run sends only what the target has not acknowledged, so ${own} was started anew`;
    }
    // --resume would be refused (checkResumeKey): the rows that run settled went to its key's workspace
    if (otherKeys(found, options.key)) {
      throw new UsageError(
        `an upload of ${files.join(', ')} to ${target} under another API key (${found.key}), not this one (${options.key}), ${journalStory(found)}; its journal is ${path}.\n` +
          'Workspaces may share a URL: if this key is of another workspace, give this upload its own --journal; if it is of the same\n' +
          'workspace (a new key), give --restart to send every row again.',
      );
    }
    const split = path === journalPath ? undefined : splitOf(path, endpoint);
    if (split !== undefined) {
      throw new UsageError(
        `an upload of ${files.join(', ')} to ${target} by --shard ${split.index}/${split.count} ${journalStory(found)}; its journal is ${path}.\n` +
          `This run ${options.shard === undefined ? 'takes every row' : `splits the rows in ${options.shard.count}`}: it would send again the rows the shards of ${split.count} sent ` +
          `(events and purchases would be stored twice). Run the shards of ${split.count} (--shard K/${split.count}, --resume-or-start\n` +
          'finishes each), or give --restart to send every row again.',
      );
    }
    // a run of every row: this shard's run cannot resume it (a journal holds one shard, or none)
    if (options.shard !== undefined && path !== journalPath) {
      throw new UsageError(
        `an upload of ${files.join(', ')} to ${target} of every row (no --shard) ${journalStory(found)}; its journal is ${path}.\n` +
          `This run takes shard ${options.shard.index} of ${options.shard.count}: it would send again the rows of this shard that run sent (events and purchases would be\n` +
          (found.end?.complete === true
            ? 'stored twice). Give --restart to send every row of this shard again.'
            : `stored twice). Resume that run as it was (--resume --journal ${path}, without --shard), or give --restart to send every row of this shard again.`),
      );
    }
    const resume = path === journalPath ? '--resume' : `--resume --journal ${path}`;
    throw new UsageError(`an upload of ${files.join(', ')} to ${target} ${journalStory(found)}; its journal is ${path}.\n${await waysOn(found, resume, options)}`);
  };
  if (own !== undefined) {
    const files = overlap(own);
    if (files.length > 0) return refuse(journalPath, own, files);
  }
  // the same files given in another order, or with others, keep their journal under another name;
  // a --journal given names the one journal to look at (one that does not exist starts fresh)
  // the journals of this target with no shard (an earlier run of every row), of this run's shard, and
  // of the shards of another split (or of any split, for a run of every row): their users are among
  // this run's. Another shard of this run's split is another run's, which sent other users.
  const folders = options.journalPath === undefined ? inputFolders(inputs) : new Set<string>();
  const suffixes = [journalSuffix(endpoint, true, undefined), journalSuffix(endpoint, false, undefined)];
  if (options.shard !== undefined) suffixes.push(journalSuffix(endpoint, true, options.shard));
  const ours = (path: string): boolean => {
    const split = splitOf(path, endpoint);
    return suffixes.some((suffix) => path.endsWith(suffix)) || (split !== undefined && split.count !== options.shard?.count);
  };
  // a journal of this run's key says best what this run may do (its shards' advice, resuming it):
  // one of another key is said only when there is none
  let otherKey: { path: string; found: ParsedJournal; files: string[] } | undefined;
  for (const folder of folders) {
    const names = await readdir(folder).catch(() => [] as string[]);
    const beside = names.filter(ours).map((name) => join(folder, name));
    // journals kept beside an input in another folder, which named this folder's files too
    const elsewhere = names.includes(JOURNALS_NOTE) ? (await journalsNoted(join(folder, JOURNALS_NOTE), target)).filter(ours) : [];
    for (const path of new Set([...beside, ...elsewhere])) {
      if (resolve(path) === resolve(journalPath)) continue;
      const found = await readableJournal(path);
      const files = found === undefined ? [] : overlap(found);
      if (found === undefined || files.length === 0) continue;
      if (!otherKeys(found, options.key)) return refuse(path, found, files);
      otherKey ??= { path, found, files };
    }
  }
  if (otherKey !== undefined) return refuse(otherKey.path, otherKey.found, otherKey.files);
  if (own === undefined) return undefined;
  if (touchedFiles(own).length === 0) return `the journal ${journalPath} of an earlier run that sent nothing was replaced`;
  if (own.end?.complete !== true) return unfinished(journalPath, own, target, inputs, identities, options.rerunSafe);
  return `the journal ${journalPath} of an earlier upload of other files (or of these files before they changed) was replaced`;
}

/**
 * A run of other files, or of these files changed since, would replace a journal whose run did not
 * finish: that run could then never be resumed. Refused, with the ways on; a run that cannot store
 * anything twice (rerunSafe) replaces it, and says so.
 */
async function unfinished(
  journalPath: string,
  own: ParsedJournal,
  target: string,
  inputs: readonly string[],
  identities: ReadonlyArray<Awaited<ReturnType<typeof identifyFile>>>,
  rerunSafe: RerunSafe | undefined,
): Promise<string> {
  const changed = inputs.flatMap((file, i) => {
    const was = touchedFiles(own).find((f) => f.identity.path === identities[i].path);
    return was === undefined ? [] : [{ file, was: was.identity, now: identities[i] }];
  });
  if (rerunSafe !== undefined && (await rerunSafe(own))) {
    return `the journal ${journalPath} of an upload that ${journalStory(own)} was replaced: this run sends only what the target has not acknowledged`;
  }
  if (changed.length > 0) {
    const { file, was, now } = changed[0];
    throw new UsageError(
      `an upload of ${changed.map((c) => c.file).join(', ')} to ${target} ${journalStory(own)}; its journal is ${journalPath}, and ${file} ${changedMessage(journalPath, was, now).replace(/; restore .*$/s, '')}.\n` +
        'It cannot be resumed, nor safely started again: restore the file it read to resume it (--resume), or give --restart to send\n' +
        'every row of these inputs again (rows the earlier run delivered are then sent twice: events and purchases stored twice).',
    );
  }
  const held = touchedFiles(own).map((f) => f.identity.path).join(', ');
  throw new UsageError(
    `the journal ${journalPath} holds an upload of ${held} to ${own.target ?? target} that ${journalStory(own)}: this run of ${inputs.join(', ')} would replace it, ` +
      'and that run could then never be resumed.\n' +
      `Give this upload its own --journal (and resume that run with --resume --journal ${journalPath}), or give --restart to drop that journal.`,
  );
}

/**
 * A journal holds rows of files in several folders but lies beside the first only; each other
 * folder gets a line in this file naming it, so that a later run of those files alone finds it.
 */
const JOURNALS_NOTE = '.track-journals';

/** The folders of the inputs, as given and with symbolic links resolved (a link's journal lies beside it, its file's beside that). */
const inputFolders = (inputs: readonly string[]): Set<string> =>
  new Set(localFiles(inputs).flatMap((file) => [dirname(resolve(file)), dirname(inputKey(file))]));

/** The journals of this target a folder's note names. */
async function journalsNoted(path: string, target: string): Promise<string[]> {
  if ((await stat(path).catch(() => undefined))?.isFile() !== true) return [];
  const text = await readFile(path, 'utf8').catch(() => '');
  const paths: string[] = [];
  for (const line of text.split('\n')) {
    try {
      const entry = JSON.parse(line) as { journal?: unknown; target?: unknown };
      if (typeof entry.journal === 'string' && entry.target === target) paths.push(entry.journal);
    } catch {
      // a line cut short or edited: passed over
    }
  }
  return paths;
}

/** Notes the journal in every folder of the inputs but its own (best effort: a folder may be read-only). */
export async function noteJournal(journalPath: string, target: string, inputs: readonly string[]): Promise<void> {
  const home = dirname(resolve(journalPath));
  for (const folder of inputFolders(inputs)) {
    if (folder === home) continue;
    const note = join(folder, JOURNALS_NOTE);
    if ((await journalsNoted(note, target)).includes(resolve(journalPath))) continue;
    await appendFile(note, `${JSON.stringify({ journal: resolve(journalPath), target })}\n`).catch(() => undefined);
  }
}

/** The journal must be a regular file (or none yet) in a folder this run can write. */
async function checkJournalPath(path: string): Promise<void> {
  const info = await stat(path).catch(() => undefined);
  if (info !== undefined && !info.isFile()) throw new UsageError(`--journal ${path} is not a regular file`);
  await checkWritable('--journal', path);
}

/** Whether running again what an earlier run's journal holds can store nothing twice (a delta run may then go). */
export type RerunSafe = (earlier: ParsedJournal) => Promise<boolean>;

/** What the inputs may hold, as far as sending them again goes: events or purchases, operations that add. */
export type InputContents = () => Promise<{ activities: boolean; adding: boolean }>;

/**
 * What a refused run may do instead: after a --delta run, of a file of attributes set to values, the
 * same with --delta sends only what changed since; --resume sends the rows not settled; --restart all.
 */
async function waysOn(found: ParsedJournal, resume: string, options: { contents?: InputContents; delta?: boolean }): Promise<string> {
  const holds = await options.contents?.();
  const twice = holds === undefined || holds.activities ? ' (events and purchases would be stored twice)' : '';
  if (holds !== undefined && !holds.activities && !holds.adding && options.delta !== true && found.remembers.includes('attributes')) {
    return (
      'Running it again would send those rows again. It was sent with --delta, and the files hold attributes only: give --delta again\n' +
      `to send only what changed since (the state knows what the target holds), ${resume} to send only the rows not settled yet, or\n` +
      '--restart to start over and send every row again.'
    );
  }
  return `Running it again would send those rows again${twice}. Give ${resume} to send\nonly the rows not settled yet, or --restart to start over and send every row again.`;
}

/** Where a delivery goes, and the journal it keeps (none for standard input, which cannot be read again). */
export interface Target {
  endpoint: URL;
  /** The endpoint's origin and path: what a journal names. */
  target: string;
  journalPath?: string;
  /** Said in the summary: an earlier journal this run replaces. */
  note?: string;
  /** The run resumes its journal (--resume, or --resume-or-start finding a run to resume). */
  resume: boolean;
  /** The run replaces its journal's (--restart, or --resume-or-start finding a finished run of inputs since changed). */
  restart?: boolean;
  /** Gives back the journal, which the run holds from its check until it closes the journal (journal-lock.ts). */
  release: () => void;
}

/** Checks a delivery's URL, its --resume/--restart and its journal, and refuses a run that would send rows twice. */
export async function checkTarget(
  inputs: readonly string[],
  given: {
    url: string;
    journalPath?: string;
    noJournal?: boolean;
    resume?: boolean;
    restart?: boolean;
    /** --resume-or-start: resume the journal's run of these inputs when there is one, else start. */
    resumeOrStart?: boolean;
    rerunSafe?: RerunSafe;
    remote?: RemoteIdentities;
    namedAfter?: string;
    contents?: InputContents;
    delta?: boolean;
    shard?: Shard;
    /** The fingerprint of the run's API key (keyFingerprint), which a journal keeps. */
    key?: string;
    /** The --state file of a --delta or --dedupe-events run, which the journal must not be. */
    statePath?: string;
  },
): Promise<Target> {
  const options = given;
  const endpoint = resolveEndpoint(options.url); // a bad URL is a usage error before anything is read
  const target = `${endpoint.origin}${endpoint.pathname}`;
  if (inputs.length === 0) throw new UsageError('give at least one input file (or - for standard input)');
  if (options.resume === true && options.restart === true) throw new UsageError('give --resume or --restart, not both');
  if (options.resumeOrStart === true && (options.resume === true || options.restart === true)) {
    throw new UsageError(`give --resume-or-start alone, not with ${options.resume === true ? '--resume' : '--restart'}: it resumes or starts as the journal says`);
  }
  const fromStdin = inputs.includes(STDIN);
  if (fromStdin && (options.resume === true || options.resumeOrStart === true)) {
    throw new UsageError(`${options.resume === true ? '--resume' : '--resume-or-start'} cannot be used with standard input (-): it cannot be read again`);
  }
  if (options.noJournal === true) {
    if (options.journalPath !== undefined) throw new UsageError('give --journal or --no-journal, not both');
    // --restart asks for what a run without a journal does anyway
    if (options.resume === true || options.resumeOrStart === true) {
      throw new UsageError('--resume reads the journal of a run, and this one keeps none (--no-journal, or the emulator of track emulate --exec): give --journal PATH');
    }
  }
  // the same messages as a dry run for a missing or unreadable input, before the journal looks at it
  const readable = async (): Promise<void> => {
    for (const file of inputs) await checkReadable(file);
  };
  if (fromStdin || options.noJournal === true) {
    await readable();
    return { endpoint, target, resume: false, release: () => undefined };
  }
  const journalPath = options.journalPath ?? (await journalBeside(inputs, options.namedAfter ?? inputs[0], endpoint, target, options.shard));
  if (await isOneOf(journalPath, inputs)) throw new UsageError(`--journal ${journalPath} is also an input file`);
  await checkFilesApart([['--state', options.statePath], ['--journal', journalPath]]);
  await readable();
  await checkJournalPath(journalPath);
  // a second run on the journal while this one holds it is refused before it reads the journal
  const release = lockJournal(journalPath);
  try {
    return { ...(await checkJournal(inputs, options, { endpoint, target, journalPath })), release };
  } catch (error) {
    release();
    throw error;
  }
}

type TargetOptions = Parameters<typeof checkTarget>[1];

/** What the run does with its journal (held by this run): resume it, replace it, or be refused. */
async function checkJournal(inputs: readonly string[], given: TargetOptions, at: { endpoint: URL; target: string; journalPath: string }): Promise<Omit<Target, 'release'>> {
  const { endpoint, target, journalPath } = at;
  let options = given;
  let started: string | undefined;
  if (options.resumeOrStart === true) {
    const how = await resumeOrStart(journalPath, target, inputs, options.remote);
    options = { ...options, resume: how === 'resume', restart: how === 'restart' };
    if (how === 'restart') started = `the journal ${journalPath} held a completed upload of these inputs before they changed: this run started anew`;
  }
  if (options.resume === true && options.key !== undefined) {
    // a run under another key that sent nothing (its key refused at once: a mistyped one) left nothing
    // out of this one; started anew, the journal keeps this run's key, so this key's next run resumes it
    const found = await readableJournal(journalPath);
    if (found?.key !== undefined && found.key !== options.key && sentNothing(found)) {
      options = { ...options, resume: false, restart: true };
      started = `the journal ${journalPath} held a run under another API key (${found.key}) that sent nothing (the server refused what it sent unapplied): this run started anew`;
    }
  }
  if (options.restart !== true) await checkShard(journalPath, options.resume === true, options.shard, endpoint);
  const note = (await checkRerun(journalPath, target, inputs, options)) ?? started;
  return { endpoint, target, journalPath, note, resume: options.resume === true, restart: options.restart === true };
}

/**
 * What --resume-or-start does with the journal at `path`: resume the run it holds of these inputs
 * (finished or not: a finished one then sends nothing), or start when there is none; start anew when
 * the run it holds finished and the inputs changed since (a new export under the same name). A run
 * that did not finish, of inputs that changed since, cannot be resumed nor safely started again:
 * refused, as --resume would.
 */
async function resumeOrStart(path: string, target: string, inputs: readonly string[], remote: RemoteIdentities | undefined): Promise<'resume' | 'start' | 'restart'> {
  let found: ParsedJournal | undefined;
  try {
    found = await findJournal(path);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (found === undefined) return 'start';
  const identities = await Promise.all(inputs.map((file) => identifyFile(file, remote)));
  // a journal of other files holds no run of these: the run starts (and the re-run guard says whether it may replace it)
  if (!identities.some((now) => found.files.some((f) => f.identity.path === now.path))) return 'start';
  if (found.target !== undefined && found.target !== target) {
    throw new UsageError(`the journal ${path} holds an upload to ${found.target}, not to ${target}; give another --journal (or none: each target keeps its own)`);
  }
  const unchanged = identities.every((now) => found.files.some((f) => f.identity.path === now.path && sameIdentity(f.identity, now)));
  if (unchanged) return 'resume';
  if (found.end?.complete === true || touchedFiles(found).length === 0) return 'restart';
  throw new UsageError(
    `the journal ${path} holds an upload to ${target} that ${journalStory(found)}, and its inputs changed since: it cannot be resumed. ` +
      'Restore the inputs it read to resume it, or give --restart to send every row of these inputs (rows the earlier run delivered may be sent twice)',
  );
}
