// An upload after its target and journal are checked: the rest of its checks, the state and the
// files it writes opened (upload-open.ts), then the plan followed and its requests delivered, or
// drained in a dry run (UploadRun.send), everything closed in order (close), and the summary.
import { isMistake, UsageError } from '../errors.js';
import { checkFormat, checkReadable, formatOf, STDIN } from '../input/source.js';
import type { ColumnMap } from '../mapping/column-map.js';
import type { RejectRecord } from '../model/request.js';
import { ARRAY_NAMES } from '../model/types.js';
import { findJournal, inputKey, isWhole, openJournal, type Journal } from '../records/journal.js';
import { lineLedger } from '../records/line-ledger.js';
import type { StateWriter } from '../records/state.js';
import { targetOf } from '../transport/endpoint.js';
import type { DeliverySummary } from '../transport/index.js';
import { requestJson, type RequestToSend } from '../transport/request.js';
import { checkFilesApart, checkHeaders, checkWritable, isOneOf, readColumnMap } from './check.js';
import { checkOutputs, checkRejectsFormat, heldNote, outWriter, owedNote, rejectsLedger, rejectsSoFar, rejectsWriter } from './outputs.js';
import { batchRecord, batchSize, type RejectBatch } from './reject-batch.js';
import { rejectsFileOf } from './rejects-name.js';
import type { Target } from './rerun.js';
import type { sharedPace } from './shared-pace.js';
import type { RunningPlan } from './start-plan.js';
import { addPlanEvent, countReasons, emptyPlanSummary, type PlanSummary } from './summary.js';
import { checkRun, openRecords, openRunState, type CheckedRun, type ResolvedRun, type RunRecords, type RunState } from './upload-open.js';
import type { SendOptions, UploadOptions, UploadSummary } from './upload-options.js';

const asError = (error: unknown): Error => (error instanceof Error ? error : new Error(String(error)));

/** A delivery that left requests unsettled (stopped, aborted, failed). */
const isIncomplete = (d: DeliverySummary | undefined): boolean =>
  d !== undefined && (d.requestsAbandoned > 0 || d.stopped || d.aborted || d.fatal !== undefined);

/** The run after its target and journal are checked: the rest of its checks, then open, plan, deliver, close, summarise. */
export async function uploadChecked(options: UploadOptions, run: ResolvedRun, target: Target | undefined, key: string | undefined): Promise<UploadSummary> {
  const checked = await checkRun(options, run, target, key);
  let upload: UploadRun;
  try {
    const state = await openRunState(options, checked.deltaTarget, key, run.stateWriter);
    const records = await openRecords(options, run, target, key, checked, state.writer);
    upload = new UploadRun(options, run, target, checked, state, records);
    // (only a plan that cannot start throws here: the delivery closes the budget itself)
    await upload.send();
  } catch (error) {
    // the shared budget's connection (--rate-store) is closed with the run, or the process stays on
    await checked.pace?.close().catch(() => undefined);
    throw error;
  }
  await upload.close();
  return upload.summary();
}

/** 3-6. The run with its records open: its plan followed and delivered (send), closed (close), summarised (summary). */
class UploadRun {
  readonly #options: UploadOptions;
  readonly #run: ResolvedRun;
  readonly #target: Target | undefined;
  readonly #checked: CheckedRun;
  readonly #state: RunState;
  readonly #records: RunRecords;
  #plan: RunningPlan | undefined;
  #summary = emptyPlanSummary();
  #readAll = false;
  /** The file being read: once the next begins, it was read to its end (a resumed run need not read it again once all its rows settle). */
  #current: string | undefined;
  /** The rows rejected before sending the reader was last told of (#tellProgress). */
  #toldRejected = 0;
  /** What earlier runs rejected of the rows this one skips (rejectedBefore), and the size of `written` it was counted at. */
  #earlier: { rows: number; fields: number; at: number } | undefined;
  /**
   * What broke the plan (an input damaged or cut while it was read): the run stops with it once the
   * requests planned before it are sent and answered. Thrown at the delivery, it stopped those it had
   * taken and not yet sent, and their rows, whole and read, went unsent.
   */
  #broken: Error | undefined;
  #delivery: DeliverySummary | undefined;
  /** What stopped the run outside the delivery: the run's fatal error. */
  #fatal: Error | undefined;
  /** A shared budget that failed mid-run, said in the summary too (a scheduler keeps it). */
  readonly #paceNotes: string[] = [];
  /** Items the server refused, by reason. */
  readonly #refusedReasons: Record<string, number> = {};
  /** The state wrote what it was handed (else the rows it did not write stay in doubt). */
  #stateWent = true;

  constructor(options: UploadOptions, run: ResolvedRun, target: Target | undefined, checked: CheckedRun, state: RunState, records: RunRecords) {
    this.#options = options;
    this.#run = run;
    this.#target = target;
    this.#checked = checked;
    this.#state = state;
    this.#records = records;
  }

  /** 3. The plan, in the worker thread when sending from files: rows an earlier run settled are left out. */
  async #startPlan(): Promise<RunningPlan> {
    const options = this.#options;
    const { send, delta } = options;
    const { inputs, remote } = this.#run;
    const { deltaTarget, map, mapColumnsOfStdin } = this.#checked;
    const { format, encoding, kind, reading, limits, maxBodyBytes, stdin, stopSignal } = options;
    // rows an earlier run left in doubt are sent again by --restart, whatever --on-unknown says
    const skips = this.#records.journal?.skips(inputs, send?.onUnknown === 'reject' && this.#target?.restart !== true);
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
    const planHere = delta?.attributes === true && !delta.full && this.#state.known;
    const inWorker = send !== undefined && options.thread !== false && !planHere && !inputs.includes(STDIN);
    return (await import('./start-plan.js')).startPlan(planOptions, { inWorker, stdin, stopSignal, planner: this.#run.planner });
  }

  async #writeReject(record: RejectRecord): Promise<void> {
    await this.#records.rejected.write(record);
    this.#options.onReject?.(record);
  }

  async #writeRejects(batch: RejectBatch): Promise<void> {
    await this.#records.rejected.writeBatch(batch);
    const onReject = this.#options.onReject;
    if (onReject !== undefined) for (let i = 0; i < batchSize(batch); i += 1) onReject(batchRecord(batch, i));
  }

  /** The plan's requests, its other events taken on the way: rejects written, rows counted and settled, progress told. */
  async *#requests(plan: RunningPlan): AsyncGenerator<RequestToSend> {
    const { journal, ledger } = this.#records;
    for await (const event of untilBroken(plan.events, (error) => (this.#broken = error))) {
      const current = this.#current;
      if (event.type === 'file' && current !== undefined) journal?.readToEnd(current, this.#summary.files.findLast((f) => f.file === current)?.rows ?? 0);
      if (event.type === 'file') this.#current = event.file;
      // a rejected row is counted once its line is written: a summary never names a row the file lacks
      if (event.type === 'reject' || event.type === 'dropped-field') await this.#writeReject(event.record);
      else if (event.type === 'rejects') await this.#writeRejects(event.batch);
      this.#summary = addPlanEvent(this.#summary, event);
      switch (event.type) {
        case 'read':
          this.#tellProgress(event.file, event.bytes);
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
          this.#readAll = this.#broken === undefined;
          break;
        case 'request':
          // a chunk's rejects come after its tally: the reader is told them before its requests wait to be sent
          if (this.#summary.rejected !== this.#toldRejected && this.#current !== undefined) this.#tellProgress(this.#current, 0);
          yield event.request;
          break;
      }
    }
    // a plan told to stop ends early as if done: only one that ended by itself read every row
    this.#readAll = (this.#readAll || !plan.stopped) && this.#broken === undefined;
    // the last chunk's rejects and requests come after its tally: the reader is told the whole plan
    const last = this.#summary.files.at(-1)?.file;
    if (last !== undefined) this.#tellProgress(last, 0);
  }

  #tellProgress(file: string, bytes: number): void {
    const summary = this.#summary;
    this.#toldRejected = summary.rejected;
    const onProgress = this.#options.onProgress;
    if (onProgress === undefined) return;
    // a resumed run counts the rows it skips as read, and the summary those of them an earlier run
    // rejected: they are told as the skipped rows are read, at most as many (never more rejected than read)
    const read = summary.rows - (summary.unread ?? 0);
    const earlier = Math.min(this.#rejectedEarlier().rows, summary.skipped - (summary.unread ?? 0));
    onProgress({ file, rows: read, requests: summary.requests, bytes, rejected: summary.rejected + Math.max(earlier, 0), dataPoints: summary.dataPoints.planned });
  }

  /**
   * What earlier runs rejected of the rows this one skips (rejectedBefore), counted once: again only
   * when the rejects file took lines since (those the run before could not write, written now).
   */
  #rejectedEarlier(): { rows: number; fields: number } {
    const { journal, written } = this.#records;
    if (journal === undefined) return { rows: 0, fields: 0 };
    if (this.#earlier === undefined || this.#earlier.at !== written.size) this.#earlier = { ...rejectedBefore(written, journal), at: written.size };
    return this.#earlier;
  }

  /** 4. Delivers the plan's requests, or drains the plan (a dry run). */
  async send(): Promise<void> {
    const plan = (this.#plan = await this.#startPlan());
    try {
      const send = this.#options.send;
      if (send !== undefined) await this.#deliver(plan, send);
      else {
        for await (const request of this.#requests(plan)) {
          await this.#records.out?.writeLine(requestJson(request));
          if (this.#options.stopSignal?.aborted === true) break;
        }
      }
    } catch (error) {
      this.#fatal = asError(error);
    }
    // the plan's error stops the run as the delivery's would (a stop or failure of its own comes first)
    const broken = this.#broken;
    if (broken !== undefined && this.#delivery !== undefined) this.#delivery.fatal ??= broken;
    else if (broken !== undefined) this.#fatal ??= broken;
  }

  async #deliver(plan: RunningPlan, send: SendOptions): Promise<void> {
    const options = this.#options;
    const { journal, ledger, out } = this.#records;
    const state = this.#state.writer;
    const pace = this.#checked.pace;
    const [{ deliver }, { createTrackClient }] = await Promise.all([import('../transport/deliver.js'), import('../transport/http-client.js')]);
    // Parquet is decoded by WebAssembly, which V8 must be free to optimise
    const baselineWasm = send.baselineWasm === true && !this.#run.inputs.some((file) => formatOf(file, options.format) === 'parquet');
    const client = createTrackClient({ url: send.url, apiKey: send.apiKey, connections: send.concurrency, timeoutMs: send.requestTimeoutMs, baselineWasm });
    const sending = this.#requests(plan);
    try {
      this.#delivery = await deliver(sending, {
        client,
        concurrency: send.concurrency,
        rate: pace?.rate ?? send.rate,
        hourly: pace?.hourly ?? send.hourly,
        pacer: pace?.pacer?.((notice) => {
          // a shared budget that failed mid-run is said in the summary too, which a scheduler keeps
          if (notice.type === 'warning') this.#paceNotes.push(notice.message);
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
        inDoubtRows: journal === undefined || journal.inDoubt === 0 ? undefined : (request, into) => journal.inDoubtRows(request, into),
        notApplied: journal === undefined ? undefined : (request) => journal.notApplied(request),
        sentAgain: journal === undefined ? undefined : (rows) => journal.sentAgain(rows),
        carriedDuplicates: journal?.unreported,
        onReject: async (record) => {
          countReasons(this.#refusedReasons, record.errors);
          await this.#writeReject(record);
        },
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
  }

  /** The run went through, as it began to close: nothing stopped it, in the delivery or outside it. */
  #went = false;

  /** Closes one thing: what fails here is the run's fatal error, not a lost summary. */
  async #closing(close: () => Promise<void> | undefined): Promise<void> {
    try {
      await close();
    } catch (error) {
      this.#fatal ??= asError(error);
    }
  }

  /** 5. Closes the plan, --out, the state, the journal's last rows, the rejects file and the journal, in that order. */
  async close(): Promise<void> {
    const { out, journal, rejects, resume } = this.#records;
    const state = this.#state.writer;
    this.#plan?.release();
    const went = (this.#went = this.#fatal === undefined && this.#delivery?.fatal === undefined);
    // --out holds every request of a run that went through, none included: an empty file, not an earlier run's
    if (out !== undefined && out.count === 0 && went) await this.#closing(() => out.open());
    await this.#closing(() => out?.close());
    // a state that fails leaves the rows it did not write in doubt (deliver journals them once written)
    await this.#closing(async () => {
      try {
        await state?.close();
      } catch (error) {
        this.#stateWent = false;
        throw error;
      }
    });
    // rows the plan settled on its way out need their reject lines synced, before the file closes
    await this.#closing(() => journal?.flush());
    await this.#closing(() => rejects.close({ removeIfEmpty: went && !resume }));
    await this.#closing(() => (journal === undefined ? undefined : this.#closeJournal(journal, went)));
  }

  #closeJournal(journal: Journal, went: boolean): Promise<void> {
    const delivery = this.#delivery;
    // a person's mistake found before anything was sent (a state file found damaged) leaves the journal as it was (exit 2);
    // not once a new run wrote its rejects file over the run before's: the journal stays with the rejects it settled
    const rewroteRejects = !this.#records.resume && this.#records.rejects.count > 0;
    if ((delivery?.attempts ?? 0) === 0 && !rewroteRejects && isMistake(delivery?.fatal ?? this.#fatal)) return journal.revert();
    const complete = this.#readAll && went && this.#stateWent && !isIncomplete(delivery);
    const rowsRead = this.#readAll ? new Map(this.#summary.files.map((f) => [f.file, f.rows])) : undefined;
    return journal.close({ complete, rowsRead });
  }

  /**
   * 6. The summary: the rows an earlier run rejected count as rejected, so a retry of a finished run
   * exits 1 as that run did, naming the rejects file that holds them.
   */
  summary(): UploadSummary {
    const options = this.#options;
    const summary = this.#summary;
    const delivery = this.#delivery;
    const { journal, rejects, out, rejected, written, owed, ledger } = this.#records;
    const { rejectsPath, rejectsNote, journalNote } = this.#checked;
    const before = this.#rejectedEarlier();
    const targetNote = this.#target?.note;
    return {
      ...summary,
      rejected: summary.rejected + before.rows,
      rejectedTotal: summary.rejected + before.rows + ARRAY_NAMES.reduce((sum, kind) => sum + (delivery?.items[kind].rejected ?? 0), 0),
      rejectReasons: before.rows === 0 ? summary.rejectReasons : { ...summary.rejectReasons, [EARLIER_REJECTS]: before.rows },
      droppedFields: summary.droppedFields + before.fields,
      skippedRejected: before.rows,
      notes: [
        ...summary.notes,
        ...(targetNote === undefined ? [] : [targetNote]),
        ...(journalNote === undefined ? [] : [journalNote]),
        ...(rejectsNote === undefined ? [] : [rejectsNote]),
        ...this.#state.notes,
        ...this.#paceNotes,
        ...heldNote(rejected.held, rejectsPath),
        ...owedNote(owed, rejectsPath),
      ],
      rejectsPath: rejects.count > 0 || before.rows + before.fields > 0 ? rejectsPath : undefined,
      journalPath: journal?.path,
      outPath: out !== undefined && (out.count > 0 || this.#went) ? options.outPath : undefined,
      elapsedMs: Math.round(performance.now() - this.#run.started),
      delivery,
      refusedReasons: this.#refusedReasons,
      interrupted: options.stopSignal?.aborted === true,
      readToEnd: this.#readAll,
      ...unsettledRows(summary, delivery, ledger),
      fatal: this.#fatal,
    };
  }
}

/**
 * Of the rows a delivery read, those it left unsettled (neither answered, rejected nor left out: a
 * resume sends them), and of these the rows not sent when it stopped (planned, or in a request taken
 * and not posted; the rest were in requests tried and left without a verdict, `rowsAbandoned`). None in a dry run.
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
