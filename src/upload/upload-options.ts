// What upload() takes and gives: where and how it sends, what it sends only when changed, what it
// writes besides, and its summary. The library's upload() and the CLI's commands build these.
import type { RemoteSettings } from '../input/remote.js';
import type { ColumnMap } from '../mapping/column-map.js';
import type { RejectRecord } from '../model/request.js';
import type { DeliveryNotice, DeliveryProgress, DeliverySummary, OnUnknown } from '../transport/index.js';
import type { RejectsFormat } from './outputs.js';
import type { PlanOptions } from './plan.js';
import type { PlanSummary } from './summary.js';

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
  /** Rows read (not those of files an earlier run settled whole, which are not read again). */
  rows: number;
  requests: number;
  /** Bytes of input read (before gunzip) since the last report. */
  bytes: number;
  /** Rows rejected so far, before sending; on resume, with those an earlier run rejected among the rows read so far. */
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
  /** Of those, the rows not sent when it stopped (planned, or in a request taken and not posted); the others were in requests tried and left without a verdict (`delivery.rowsAbandoned`). */
  rowsNotSent?: number;
  /** What stopped the run outside the delivery: an output file that cannot be written, a plan that failed. */
  fatal?: Error;
}
