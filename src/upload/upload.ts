// `track upload` and `track validate`: input files -> rows -> checked items -> planned requests ->
// delivered to the target, or, in a dry run (no target), counted and written to --out. Every row is
// accounted for: in a request, in the rejects file, or left out on resume because it was settled.
// Over 350 lines: the run's steps (open, plan, deliver, close in order, summarise) read here in the
// order they happen; what each step does at length lives in its own module.
import { existsSync } from 'node:fs';
import { isMistake, UsageError } from '../errors.js';
import type { RemoteInputs, RemoteSettings } from '../input/remote.js';
import { checkFormat, checkReadable, formatOf, STDIN } from '../input/source.js';
import type { ColumnMap } from '../mapping/column-map.js';
import type { RejectRecord } from '../model/request.js';
import { ARRAY_NAMES } from '../model/types.js';
import type { DeliveryNotice, DeliveryProgress, DeliverySummary, OnUnknown } from '../transport/index.js';
import { requestJson, type RequestToSend } from '../transport/request.js';
import { findJournal, inputKey, isWhole, openJournal, type Journal, type ParsedJournal } from '../records/journal.js';
import type { StateWriter } from '../records/state.js';
import { lineLedger } from '../records/line-ledger.js';
import { checkApiKey, keyFingerprint } from '../transport/api-key.js';
import { targetOf } from '../transport/endpoint.js';
import { checkFilesApart, checkHeaders, checkWritable, isOneOf, readColumnMap } from './check.js';
import { rejectsFileOf } from './rejects-name.js';
import { checkOutputs, checkRejectsFormat, heldNote, outWriter, owedNote, rejectsLedger, rejectsSoFar, rejectsWriter, type RejectsFormat } from './outputs.js';
import type { PlanOptions } from './plan.js';
import { resolveInputs } from './inputs.js';
import { batchRecord, batchSize, type RejectBatch } from './reject-batch.js';
import type { StartedWorker } from './worker/in-worker.js';
import type { Target } from './rerun.js';
import { addPlanEvent, countReasons, emptyPlanSummary, type PlanSummary } from './summary.js';

export type { FileSummary, PlanSummary } from './summary.js';

/** Where and how a delivery sends. */
export interface SendOptions {
  /** The service base URL. */
  url: string;
  apiKey: string;
  /** Requests in flight at once. */
  concurrency?: number;
  /** Most requests started in any one-second window; undefined for the transport's default. */
  rate?: number;
  /** Most requests started in any hour. */
  hourly?: number;
  /** Tries after the first for 5xx, network errors and unknown outcomes. */
  retries?: number;
  /** Longest a request may take; past it, its outcome is unknown (default 60 s). */
  requestTimeoutMs?: number;
  /**
   * While the requests are sent, V8 optimises no WebAssembly in this process (`--liftoff-only`),
   * which spares the 30 MB it takes to optimise undici's HTTP parser. The flag is the process's, and
   * a function first run meanwhile stays unoptimised for the process's life: `track upload` asks
   * for it in a process of its own; upload() of the library leaves its caller's process alone.
   */
  baselineWasm?: boolean;
  onUnknown?: OnUnknown;
  /** The journal file; default `<first input>.<target>.journal` beside it. */
  journalPath?: string;
  /** Keep no journal (a throwaway target): no --resume, and no guard against sending the same rows twice. */
  noJournal?: boolean;
  /** Skip the rows an earlier run's journal settled, and add to its rejects file. */
  resume?: boolean;
  /** Start over even though the journal holds a run of the same inputs to the same target. */
  restart?: boolean;
  /** Resume the journal's run of these inputs when there is one, else start one: the same command for a first try and a retry. */
  resumeOrStart?: boolean;
  /** Cut requests in flight off (a second Ctrl-C); `stopSignal` lets them finish. */
  abortSignal?: AbortSignal;
  /**
   * Share --rate and --hourly with the other processes that send to the target (`redis://HOST:PORT[/DB]`),
   * under `rateStoreKey` (default: one key per target).
   */
  rateStore?: string;
  rateStoreKey?: string;
  onProgress?: (progress: DeliveryProgress) => void;
  onNotice?: (notice: DeliveryNotice) => void;
}

/** How far reading has got, after each chunk of rows. */
export interface ReadProgress {
  file: string;
  rows: number;
  requests: number;
  /** Bytes of input read (before gunzip) since the last report. */
  bytes: number;
  /** Rows rejected so far, before sending. */
  rejected?: number;
  /** The data points of the items planned so far. */
  dataPoints?: number;
}

/** Sending only what changed (docs/upload.md "Sending only what changed"). */
export interface DeltaRun {
  /** The state file (--state). */
  statePath: string;
  /** --delta: leave out attributes whose value the target acknowledged, and learn what it accepts. */
  attributes: boolean;
  /** --dedupe-events: leave out events and purchases the target acknowledged, and learn those it accepts. */
  activities: boolean;
  /** --full (with --delta): send every attribute, and learn them all. */
  full: boolean;
  /** The target whose state a dry run reads (a delivery's is its URL). */
  url?: string;
  /** The API key a dry run checks the state learned the target through (a delivery's is its own): never refused, a note when not. */
  apiKey?: string;
}

export interface UploadOptions extends Omit<PlanOptions, 'skips' | 'chunkBytes' | 'delta' | 'remote'> {
  /** Files the run's other outputs write (--summary-file, --events, --report): none may be its journal, state, rejects file or --out. */
  otherOutputs?: ReadonlyArray<{ flag: string; path: string }>;
  /** How inputs in storage (s3://, https://) are reached. */
  storage?: RemoteSettings;
  /** A --map file (JSON) to read; or give `map` itself. */
  mapFile?: string;
  map?: ColumnMap;
  /**
   * The rejects file; default `<first input>.rejects.ndjson` (or `.csv`) beside it, the input's whole
   * name kept, with the shard's tag (`.shard-2-of-4`) and, for a dry run, `.check` before `.rejects`
   * (rejects-name.ts). Left only when a row was rejected.
   */
  rejectsPath?: string;
  /** NDJSON records (default), or CSV rows under the inputs' header with `_file`, `_line`, `_errors`. */
  rejectsFormat?: RejectsFormat;
  /** Write each request body here, one a line: in a dry run every planned one, in a delivery each as it is first sent; `-` is standard output. */
  outPath?: string;
  /** Where to deliver the requests; without it the run is a dry run. */
  send?: SendOptions;
  /** Send only what changed, by the delta state. */
  delta?: DeltaRun;
  /** Plan in a worker thread while this one sends (default, for a delivery from files). */
  thread?: boolean;
  /** Stop reading, let requests in flight finish, save the journal (Ctrl-C). */
  stopSignal?: AbortSignal;
  onProgress?: (progress: ReadProgress) => void;
  /** Told of each rejected row once it is written to the rejects file (before sending, or refused by the server). */
  onReject?: (record: RejectRecord) => void;
}

export interface UploadSummary extends PlanSummary {
  /** Of the rows left out because an earlier run settled them (`skipped`), those it rejected: not delivered. */
  skippedRejected?: number;
  /** The rejects file, when anything was written to it. */
  rejectsPath?: string;
  /** The journal a --resume of this run reads (none for standard input). */
  journalPath?: string;
  outPath?: string;
  elapsedMs: number;
  /** What the delivery did; undefined in a dry run. */
  delivery?: DeliverySummary;
  /** Items the server refused (each a line of the rejects file), by reason; empty in a dry run. */
  refusedReasons: Record<string, number>;
  /** The run was stopped by its stopSignal (Ctrl-C, SIGTERM): rows may be unread or unsettled. */
  interrupted: boolean;
  /**
   * Every row rejected, the one figure to check: those refused before sending (`rejected`) and the
   * items the server refused (in `delivery.items`), as the rejects file holds them.
   */
  rejectedTotal: number;
  /** Every row of every input was read (not so when a stop or an error ended the plan first). */
  readToEnd: boolean;
  /**
   * Rows read that were neither answered, rejected nor left out: a resume sends them (0 once a
   * delivery went through; absent in a dry run). The rows not read yet are not among them (`readToEnd`).
   */
  rowsUnsettled?: number;
  /** Of those, the rows not yet handed to the delivery when it stopped; the others were in the requests it gave up (`delivery.rowsAbandoned`). */
  rowsNotSent?: number;
  /** What stopped the run outside the delivery: an output file that cannot be written, a plan that failed. */
  fatal?: Error;
}

const asError = (error: unknown): Error => (error instanceof Error ? error : new Error(String(error)));

/** A delivery that left requests unsettled (stopped, aborted, failed). */
const isIncomplete = (d: DeliverySummary | undefined): boolean =>
  d !== undefined && (d.requestsAbandoned > 0 || d.stopped || d.aborted || d.fatal !== undefined);

export async function upload(options: UploadOptions): Promise<UploadSummary> {
  const started = performance.now();
  // s3:// prefixes and globs become the objects they name; the defaults are named after the input given
  const named = options.inputs;
  if (named.length === 0) throw new UsageError('give at least one input file (or - for standard input)');
  const resolved = await resolveInputs(named, options.storage);
  // the planning thread starts now, its modules loading while the run is checked and its files opened
  // (the first request goes about a tenth of a second sooner); a run that does not plan in it ends it
  const planner = plansInWorker(options, resolved.inputs) ? await startPlannerAhead(options.delta?.attributes === true) : undefined;
  try {
    return await uploadResolved(options, { started, named, ...resolved, planner });
  } finally {
    planner?.release();
  }
}

/** A planning thread started ahead; none when one cannot be started now (the plan then starts its own, and says why it cannot). */
async function startPlannerAhead(delta: boolean): Promise<StartedWorker | undefined> {
  const { startPlanner } = await import('./worker/plan-in-worker.js');
  try {
    return startPlanner(delta);
  } catch {
    return undefined;
  }
}

/**
 * Whether the run will plan in a thread of its own, as far as can be told before its checks: a
 * delivery from files, unless --delta compares with a state file (which may know the target: it
 * then plans in this thread, see planHere).
 */
function plansInWorker(options: UploadOptions, inputs: readonly string[]): boolean {
  const { send, delta } = options;
  if (send === undefined || options.thread === false || inputs.includes(STDIN)) return false;
  return !(delta?.attributes === true && !delta.full && existsSync(delta.statePath));
}

/** A run's inputs as resolved (s3:// prefixes and globs become the objects they name), and when it began. */
type ResolvedRun = { started: number; named: readonly string[]; inputs: string[]; remote?: RemoteInputs; planner: StartedWorker | undefined };

async function uploadResolved(
  options: UploadOptions,
  run: ResolvedRun,
): Promise<UploadSummary> {
  const { send } = options;
  const { started, named, inputs, remote } = run;

  // 1. check everything a person can get wrong, before any file is written or anything sent
  // the network side (the URL, the journal, the re-run guard) is loaded for a delivery only
  const { delta } = options;
  if (delta?.full === true && !delta.attributes) throw new UsageError('--full goes with --delta: it sends every attribute and refreshes the state');
  // a run that cannot store anything twice goes even though a journal holds the same upload
  const resolved = { ...options, inputs, remote };
  const rerunSafe = delta === undefined ? undefined : async (earlier: ParsedJournal) => (await import('./rerun-contents.js')).cannotSendTwice(resolved, delta, earlier);
  const contents = async () => (await import('./rerun-contents.js')).inputContents(resolved);
  const guard = { rerunSafe, contents, delta: delta?.attributes === true };
  // the run's API key, kept by the state and the journal as its fingerprint: one that cannot be sent
  // is said before the journal, the re-run guard or the state compares with it
  if (send !== undefined) checkApiKey(send.apiKey);
  const apiKey = send?.apiKey ?? delta?.apiKey;
  const key = apiKey === undefined ? undefined : keyFingerprint(apiKey);
  const target = send === undefined ? undefined : await (await import('./rerun.js')).checkTarget(inputs, { ...send, ...guard, remote: remote?.objects, namedAfter: named[0], shard: options.shard, key, statePath: delta?.statePath });
  // the run holds its journal from its check to its close: a second run on it is refused meanwhile
  try {
    return await uploadChecked(options, run, target, key);
  } finally {
    target?.release();
  }
}

/** The run after its target and journal are checked: the rest of its checks, then open, plan, deliver, close, summarise. */
async function uploadChecked(
  options: UploadOptions,
  run: ResolvedRun,
  target: Target | undefined,
  key: string | undefined,
): Promise<UploadSummary> {
  const { send, delta } = options;
  const { started, named, inputs, remote } = run;
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
  // a resumed run does not read again what an earlier one settled whole
  const earlier = target?.resume === true && target.journalPath !== undefined ? await findJournal(target.journalPath).catch(() => undefined) : undefined;
  // the rows a run under another key settled went to its workspace, which may not be this one's
  if (earlier?.key !== undefined && earlier.key !== key && target?.journalPath !== undefined) {
    (await import('./state-names.js')).checkResumeKey(target.journalPath, earlier, target.target, key!, delta?.statePath);
  }
  // one of an earlier version names no key: it is tied to this run's (openJournal), which says so
  const journalNote = earlier !== undefined && earlier.key === undefined && key !== undefined ? (await import('./state-names.js')).keylessJournalNote(target!.journalPath!, key) : undefined;
  const whole = new Set(earlier?.files.filter(isWhole).map((f) => f.identity.path));
  // the columns a map names that no file has: standard input's header must have them
  const mapColumnsOfStdin = await checkHeaders({ ...options, inputs, remote }, map, new Set(inputs.filter((file) => whole.has(inputKey(file)))));
  if (target?.resume === true && options.rejectsFormat === 'csv') await (await import('./csv-rejects.js')).checkRejectsHeader(rejectsPath, { ...options, inputs, remote, map });
  // the shared budget answers before anything is written or sent (an unreachable store is a usage error)
  const pace = send === undefined || target === undefined ? undefined : await (await import('./shared-pace.js')).sharedPace(send, target.target, options.shard);

  // the state learns from a delivery's acknowledgements, holding the file for the whole run (a
  // second run on it is refused); a dry run only reads it (in the plan). A state file that cannot be
  // used is a usage error before anything is written
  let state: StateWriter | undefined;
  /** The state knows the target already: a --delta run then mostly leaves rows out. */
  let stateKnown = false;
  /** Said when the state knows nothing of the target but knows its host under another name; and when a dry run's key is not one the state learned the target through. */
  let stateNotes: string[] = [];
  if (delta !== undefined && deltaTarget !== undefined) {
    const { openStateWriter, stateKnows } = await import('../records/state.js');
    // the state knows each target under the keys it learned it through: a delivery under another is refused before anything is sent
    if (send !== undefined) state = await openStateWriter(delta.statePath, deltaTarget, key);
    try {
      stateKnown = stateKnows(delta.statePath, deltaTarget);
      const { otherKeyNote, otherNameNote } = await import('./state-names.js');
      const { adoptedMessage } = await import('../records/state-keys.js');
      const notes = [
        stateKnown ? undefined : otherNameNote(delta.statePath, deltaTarget),
        send === undefined && key !== undefined ? otherKeyNote(delta.statePath, deltaTarget, key, stateKnown) : undefined,
        state?.adopted === true ? adoptedMessage(delta.statePath, deltaTarget, key!, true) : undefined,
      ];
      stateNotes = notes.filter((note) => note !== undefined);
    } catch (error) {
      await state?.close().catch(() => undefined);
      throw error;
    }
  }

  // 2. outputs: the rejects file and --out open with their first line; the journal after the rejects file
  const resume = target?.resume === true;
  const rejects = rejectsWriter(rejectsPath, resume, { ...options, inputs, remote, map });
  const out = options.outPath === undefined ? undefined : outWriter(options.outPath);
  let journal: Journal | undefined;
  if (target?.journalPath !== undefined) {
    // what the state remembers of this run's sends: a later run may then leave them out (the re-run guard)
    const remembers = delta === undefined ? [] : [...(delta.attributes ? ['attributes'] : []), ...(delta.activities ? ['activities'] : [])];
    const restart = target.restart === true;
    try {
      const shard = options.shard === undefined ? undefined : `${options.shard.index}/${options.shard.count}`;
      journal = await openJournal({ path: target.journalPath, files: inputs, remote: remote?.objects, target: target.target, key, shard, resume, restart, remembers, beforeSettling: () => rejected.settle() });
      await (await import('./rerun.js')).noteJournal(target.journalPath, target.target, inputs);
    } catch (error) {
      // the state file is given back to the next run
      await state?.close().catch(() => undefined);
      throw error;
    }
  }
  // a delivery counts the rows it settles (journal or not): those read and not settled are what a stop leaves
  const ledger = journal === undefined && send === undefined ? undefined : lineLedger(journal);
  // a resumed run adds to its rejects file, and does not write again a row it holds; it first writes
  // the rejects the run before could not (its journal carried them)
  const written = resume ? await rejectsSoFar(rejectsPath, options.rejectsFormat) : new Set<string>();
  const rejected = rejectsLedger(rejects, written, journal !== undefined);
  const owed = journal === undefined || journal.owed.length === 0 ? 0 : await rejected.writeOwed(journal.owed);
  const writeReject = async (record: RejectRecord): Promise<void> => {
    await rejected.write(record);
    options.onReject?.(record);
  };
  const writeRejects = async (batch: RejectBatch): Promise<void> => {
    await rejected.writeBatch(batch);
    if (options.onReject !== undefined) for (let i = 0; i < batchSize(batch); i += 1) options.onReject(batchRecord(batch, i));
  };
  const refusedReasons: Record<string, number> = {};
  const writeRefused = async (record: RejectRecord): Promise<void> => {
    countReasons(refusedReasons, record.errors);
    await writeReject(record);
  };

  // 3. the plan, in the worker thread when sending from files: rows an earlier run settled are left out
  const { format, encoding, kind, reading, limits, maxBodyBytes, stdin, stopSignal } = options;
  // rows an earlier run left in doubt are sent again by --restart, whatever --on-unknown says
  const skips = journal?.skips(inputs, send?.onUnknown === 'reject' && target?.restart !== true);
  const planDelta =
    delta === undefined || deltaTarget === undefined
      ? undefined
      : { statePath: delta.statePath, target: deltaTarget, attributes: delta.attributes, full: delta.full, activities: delta.activities };
  const planOptions = { inputs, format, encoding, kind, map, mapColumnsOfStdin, reading, limits, maxBodyBytes, skips, delta: planDelta, remote, shard: options.shard };
  // each loaded only when used: a plan in the worker keeps the batcher and the validator out of this
  // thread, and a dry run loads no network client. A --delta run against a state that knows the
  // target plans here too: it mostly sends little, and then the plan, its whole cost, is cheaper in
  // one thread than handed across two (the unchanged re-upload of 1,000,000 rows: 3.0-3.2 s here
  // against 4.1-4.8 s in the worker; a run that changes most rows is slower here: --full plans apart)
  const planHere = delta?.attributes === true && !delta.full && stateKnown;
  const inWorker = send !== undefined && options.thread !== false && !planHere && !inputs.includes(STDIN);
  const plan = await (await import('./start-plan.js')).startPlan(planOptions, { inWorker, stdin, stopSignal, planner: run.planner });
  let summary = emptyPlanSummary();
  let readAll = false;
  /** The file being read: once the next begins, it was read to its end (a resumed run need not read it again once all its rows settle). */
  let current: string | undefined;
  /**
   * What broke the plan (an input damaged or cut while it was read): the run stops with it once the
   * requests planned before it are sent and answered. Thrown at the delivery, it stopped those it had
   * taken and not yet sent, and their rows, whole and read, went unsent.
   */
  let broken: Error | undefined;
  async function* requests(): AsyncGenerator<RequestToSend> {
    for await (const event of untilBroken(plan.events, (error) => (broken = error))) {
      if (event.type === 'file' && current !== undefined) journal?.readToEnd(current, summary.files.findLast((f) => f.file === current)?.rows ?? 0);
      if (event.type === 'file') current = event.file;
      // a rejected row is counted once its line is written: a summary never names a row the file lacks
      if (event.type === 'reject' || event.type === 'dropped-field') await writeReject(event.record);
      else if (event.type === 'rejects') await writeRejects(event.batch);
      summary = addPlanEvent(summary, event);
      switch (event.type) {
        case 'read':
          options.onProgress?.({ file: event.file, rows: summary.rows, requests: summary.requests, bytes: event.bytes, rejected: summary.rejected, dataPoints: summary.dataPoints.planned });
          break;
        case 'line-items':
          ledger?.expect(event.file, event.line, event.items);
          break;
        case 'reject':
          // a row refused before sending is settled too: a resumed run must not refuse it again
          ledger?.settledUnsent(event.record.file, event.record.line, event.record.item);
          break;
        case 'rejects':
          // (a field dropped from a row that is sent settles with its row)
          if (ledger !== undefined) settleRejected(ledger, event.batch);
          break;
        case 'unchanged':
          // and so is an item of a RequestLine the target holds already
          ledger?.settledUnsent(event.file, event.line, event.item);
          break;
        case 'unchanged-rows':
          // and rows the target holds already
          ledger?.settledUnsentRows(event.file, event.lines);
          break;
        case 'read-all':
          // a stop from here on, among the last requests, leaves no row unread
          readAll = broken === undefined;
          break;
        case 'request':
          yield event.request;
          break;
      }
    }
    // a plan told to stop ends early as if done: only one that ended by itself read every row
    readAll = (readAll || !plan.stopped) && broken === undefined;
    // the last chunk's rejects and requests come after its tally: the reader is told the whole plan
    const last = summary.files.at(-1)?.file;
    if (last !== undefined) options.onProgress?.({ file: last, rows: summary.rows, requests: summary.requests, bytes: 0, rejected: summary.rejected, dataPoints: summary.dataPoints.planned });
  }

  // 4. deliver, or drain the plan (a dry run)
  let delivery: DeliverySummary | undefined;
  const paceNotes: string[] = [];
  let fatal: Error | undefined;
  try {
    if (send !== undefined) {
      const [{ deliver }, { createTrackClient }] = await Promise.all([import('../transport/deliver.js'), import('../transport/http-client.js')]);
      // Parquet is decoded by WebAssembly, which V8 must be free to optimise
      const baselineWasm = send.baselineWasm === true && !inputs.some((file) => formatOf(file, options.format) === 'parquet');
      const client = createTrackClient({ url: send.url, apiKey: send.apiKey, connections: send.concurrency, timeoutMs: send.requestTimeoutMs, baselineWasm });
      const sending = requests();
      try {
        delivery = await deliver(sending, {
          client,
          concurrency: send.concurrency,
          rate: pace?.rate ?? send.rate,
          hourly: pace?.hourly ?? send.hourly,
          pacer: pace?.pacer?.((notice) => {
            // a shared budget that failed mid-run is said in the summary too, which a scheduler keeps
            if (notice.type === 'warning') paceNotes.push(notice.message);
            send.onNotice?.(notice);
          }),
          retries: send.retries,
          onUnknown: send.onUnknown,
          journal: ledger?.journal,
          // the request's rows are recorded as sent, and it is written to --out, before it is first posted
          beforeFirstPost:
            journal === undefined && out === undefined && state === undefined
              ? undefined
              : async (request) => {
                  // the values a request changes are forgotten before it may reach the server
                  if (request.learn !== undefined) await state?.sending(request.learn);
                  await journal?.sending(request);
                  try {
                    await out?.writeLine(requestJson(request));
                  } catch (error) {
                    journal?.notApplied(request);
                    throw error;
                  }
                },
          inDoubtRows: journal === undefined || journal.inDoubt === 0 ? undefined : (request) => journal.inDoubtRows(request),
          notApplied: journal === undefined ? undefined : (request) => journal.notApplied(request),
          sentAgain: journal === undefined ? undefined : (rows) => journal.sentAgain(rows),
          carriedDuplicates: journal?.unreported,
          onReject: writeRefused,
          onAccepted: state === undefined ? undefined : (request, rejected) => (request.learn === undefined ? undefined : state.accepted(request.learn, rejected)),
          onInDoubt: state === undefined ? undefined : (request) => (request.learn === undefined ? undefined : state.inDoubt(request.learn)),
          onProgress: send.onProgress,
          onNotice: send.onNotice,
          stopSignal: options.stopSignal,
          abortSignal: send.abortSignal,
          onStop: plan.stop,
        });
      } finally {
        // the plan may be on a row when the delivery stops: it is let finish that row before the
        // outputs close. An error the stopped plan meets then changes nothing the run reports.
        plan.stop();
        await sending.return(undefined).catch(() => undefined);
        await client.close();
        await pace?.close();
      }
    } else {
      for await (const request of requests()) {
        await out?.writeLine(requestJson(request));
        if (options.stopSignal?.aborted === true) break;
      }
    }
  } catch (error) {
    fatal = asError(error);
  }
  // the plan's error stops the run as the delivery's would (a stop or failure of its own comes first)
  if (broken !== undefined && delivery !== undefined) delivery.fatal ??= broken;
  else if (broken !== undefined) fatal ??= broken;

  // 5. close: what fails here is the run's fatal error, not a lost summary
  plan.release();
  const went = fatal === undefined && delivery?.fatal === undefined;
  const closing = async (close: () => Promise<void> | undefined): Promise<void> => {
    try {
      await close();
    } catch (error) {
      fatal ??= asError(error);
    }
  };
  // --out holds every request of a run that went through, none included: an empty file, not an earlier run's
  if (out !== undefined && out.count === 0 && went) await closing(() => out.open());
  await closing(() => out?.close());
  // a state that fails leaves the rows it did not write in doubt (deliver journals them once written)
  let stateWent = true;
  await closing(async () => {
    try {
      await state?.close();
    } catch (error) {
      stateWent = false;
      throw error;
    }
  });
  // rows the plan settled on its way out need their reject lines synced, before the file closes
  await closing(() => journal?.flush());
  await closing(() => rejects.close({ removeIfEmpty: went && !resume }));
  await closing(() => {
    if (journal === undefined) return undefined;
    // a person's mistake found before anything was sent (a state file found damaged) leaves the journal as it was (exit 2)
    if ((delivery?.attempts ?? 0) === 0 && isMistake(delivery?.fatal ?? fatal)) return journal.revert();
    const complete = readAll && went && stateWent && !isIncomplete(delivery);
    const rowsRead = readAll ? new Map(summary.files.map((f) => [f.file, f.rows])) : undefined;
    return journal.close({ complete, rowsRead });
  });

  // 6. the summary: the rows an earlier run rejected count as rejected, so a retry of a finished run
  // exits 1 as that run did, naming the rejects file that holds them
  const before = journal === undefined ? { rows: 0, fields: 0 } : rejectedBefore(written, journal);
  return {
    ...summary,
    rejected: summary.rejected + before.rows,
    rejectedTotal: summary.rejected + before.rows + ARRAY_NAMES.reduce((sum, kind) => sum + (delivery?.items[kind].rejected ?? 0), 0),
    rejectReasons: before.rows === 0 ? summary.rejectReasons : { ...summary.rejectReasons, [EARLIER_REJECTS]: before.rows },
    droppedFields: summary.droppedFields + before.fields,
    skippedRejected: before.rows,
    notes: [
      ...summary.notes,
      ...(target?.note === undefined ? [] : [target.note]),
      ...(journalNote === undefined ? [] : [journalNote]),
      ...(rejectsNote === undefined ? [] : [rejectsNote]),
      ...stateNotes,
      ...paceNotes,
      ...heldNote(rejected.held, rejectsPath),
      ...owedNote(owed, rejectsPath),
    ],
    rejectsPath: rejects.count > 0 || before.rows + before.fields > 0 ? rejectsPath : undefined,
    journalPath: journal?.path,
    outPath: out !== undefined && (out.count > 0 || went) ? options.outPath : undefined,
    elapsedMs: Math.round(performance.now() - started),
    delivery,
    refusedReasons,
    interrupted: options.stopSignal?.aborted === true,
    readToEnd: readAll,
    ...unsettledRows(summary, delivery, ledger),
    fatal,
  };
}

/**
 * Of the rows a delivery read, those it left unsettled (neither answered, rejected nor left out: a
 * resume sends them), and of these the rows not yet handed to the delivery when it stopped (the rest
 * were in requests it gave up, `rowsAbandoned`). None in a dry run.
 */
function unsettledRows(summary: PlanSummary, delivery: DeliverySummary | undefined, ledger: ReturnType<typeof lineLedger> | undefined): Pick<UploadSummary, 'rowsUnsettled' | 'rowsNotSent'> {
  if (delivery === undefined || ledger === undefined) return {};
  const rowsUnsettled = Math.max(0, summary.rows - summary.skipped - ledger.settledRows);
  return { rowsUnsettled, rowsNotSent: Math.max(0, rowsUnsettled - delivery.rowsAbandoned) };
}

/** The events until the plan fails: `failed` is told its error, and they end as if done. */
async function* untilBroken<T>(events: AsyncIterable<T>, failed: (error: Error) => void): AsyncGenerator<T> {
  try {
    yield* events;
  } catch (error) {
    failed(asError(error));
  }
}

/** The rows of a batch of rejects settled: refused before sending, a resumed run must not refuse them again. */
function settleRejected(ledger: ReturnType<typeof lineLedger>, batch: RejectBatch): void {
  for (let i = 0; i < batchSize(batch); i += 1) {
    if (batch.dropped[i] === 1) continue;
    const item = batch.items[i];
    ledger.settledUnsent(batch.files[batch.fileOf[i]], batch.lines[i], item === -1 ? undefined : item);
  }
}

/** The reason the summary gives the rows an earlier run rejected (their own reasons are in the rejects file). */
const EARLIER_REJECTS = 'rejected by an earlier run (its reasons are in the rejects file)';

/**
 * Of the rows an earlier run settled (left out of this one), how many it rejected (whole rows the
 * rejects file holds), and how many fields it left out of rows it sent.
 */
function rejectedBefore(written: ReadonlySet<string>, journal: Journal): { rows: number; fields: number } {
  const rows = new Set<string>();
  let fields = 0;
  for (const key of written) {
    // rejectKey(): line, item, column, file; a field dropped from a row sent is not a row rejected
    const [line, item, column, file] = key.split('\u0000');
    if (!journal.skipRow(file, Number(line))) continue;
    if (column !== '') fields += 1;
    else if (item === '') rows.add(`${line}\u0000${file}`);
  }
  return { rows: rows.size, fields };
}

/** The target whose state a dry run reads: its --url, without which there is no state to compare with. */
function dryRunTarget(delta: DeltaRun): string {
  if (delta.url === undefined) throw new UsageError('--delta and --dedupe-events compare with what a target acknowledged: give its --url (or TRACK_URL)');
  return targetOf(delta.url);
}
