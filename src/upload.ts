// `track upload` and `track validate`: input files -> rows -> checked items -> planned requests,
// then a dry run (count them, optionally write them out) or a delivery (the sender plugs in as
// `deliver`). Every row is accounted for: in a request, in the rejects file, or skipped on resume.
import { readFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { UsageError } from './errors.js';
import { openNdjsonWriter, type NdjsonWriter } from './input/ndjson-writer.js';
import { checkReadable, formatOf, STDIN } from './input/source.js';
import { validateColumnMap, type ColumnMap } from './mapping/column-map.js';
import type { PlannedRequest, RejectRecord } from './model/plan.js';
import type { Plan, PlanOptions } from './plan.js';
import type { PlanSummary } from './plan-summary.js';
import { planInWorker } from './plan-thread.js';

export type { FileSummary, PlanSummary } from './plan-summary.js';
export type { Plan, PlanOptions } from './plan.js';

/** Sends planned requests and hands back the items the server refused; the network sender is one. */
export type Deliver<D = unknown> = (
  requests: AsyncIterable<PlannedRequest>,
  io: { onReject: (record: RejectRecord) => Promise<void> },
) => Promise<D>;

export interface UploadOptions<D = unknown> extends Omit<PlanOptions, 'onReject' | 'map'> {
  /** Plan only: nothing is sent. */
  dryRun: boolean;
  /** A --map file (JSON) to read; or give `map` itself. */
  mapFile?: string;
  map?: ColumnMap;
  /** The rejects file (NDJSON); default `<first input>.rejects.ndjson` beside it. Left only when a row was rejected. */
  rejectsPath?: string;
  /** Add to an existing rejects file instead of starting it anew (a resumed run). */
  appendRejects?: boolean;
  /** Called after each row rejected before sending is written to the rejects file. */
  onRejectWritten?: (record: RejectRecord) => void;
  /** Dry run: write each planned request body here, one a line. */
  outPath?: string;
  /** The sender, for a run that is not a dry run. */
  deliver?: Deliver<D>;
  /**
   * Plan in a worker thread while this one sends (a delivery from files, not standard input): the
   * rows to skip are then given as line ranges per file instead of skipRow.
   */
  workerPlan?: {
    skip: ReadonlyMap<string, Array<[number, number]>>;
    skipItems?: ReadonlyMap<string, ReadonlyMap<number, ReadonlySet<number>>>;
  };
  /** Stop reading (the delivery is stopping): a plan made in a worker ends at once. */
  stopSignal?: AbortSignal;
}

export interface UploadSummary<D = unknown> extends PlanSummary {
  /** The rejects file, when anything was written to it. */
  rejectsPath?: string;
  outPath?: string;
  elapsedMs: number;
  /** What `deliver` returned. */
  delivery?: D;
}

export const SENDING_UNAVAILABLE = 'upload() sends only through a deliver function; send() supplies the network one';

/** `users.csv.gz` -> `users.rejects.ndjson` beside it; standard input -> `stdin.rejects.ndjson` here. */
export function defaultRejectsPath(firstInput: string): string {
  if (firstInput === STDIN) return 'stdin.rejects.ndjson';
  const name = basename(firstInput).replace(/\.gz$/i, '').replace(/\.[^.]+$/, '');
  return join(dirname(firstInput), `${name}.rejects.ndjson`);
}

/** Reads and checks a --map file. */
export async function readColumnMap(path: string): Promise<ColumnMap> {
  let json: unknown;
  try {
    json = JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    const e = error as NodeJS.ErrnoException;
    throw new UsageError(`--map ${path}: ${e.code === 'ENOENT' ? 'no such file' : e.code ?? `is not valid JSON (${e.message})`}`);
  }
  const result = validateColumnMap(json);
  if (!result.ok) throw new UsageError(`--map ${path}:\n  ${result.problems.join('\n  ')}`);
  return result.map;
}

export async function upload<D = unknown>(options: UploadOptions<D>): Promise<UploadSummary<D>> {
  const started = performance.now();
  const { deliver } = options;
  if (!options.dryRun && deliver === undefined) throw new UsageError(SENDING_UNAVAILABLE);
  if (options.inputs.length === 0) throw new UsageError('give at least one input file (or - for standard input)');
  if (options.inputs.filter((file) => file === STDIN).length > 1) throw new UsageError('standard input (-) can be read only once');
  for (const file of options.inputs) formatOf(file, options.format);
  for (const file of options.inputs) await checkReadable(file);
  const map = options.mapFile !== undefined ? await readColumnMap(options.mapFile) : options.map;

  const rejectsPath = options.rejectsPath ?? defaultRejectsPath(options.inputs[0]);
  const inputs = new Set(options.inputs.filter((file) => file !== STDIN).map((file) => resolve(file)));
  for (const [flag, path] of [['--rejects', rejectsPath], ['--out', options.outPath]] as const) {
    if (path !== undefined && inputs.has(resolve(path))) throw new UsageError(`${flag} ${path} is also an input file`);
  }
  if (options.outPath !== undefined && resolve(options.outPath) === resolve(rejectsPath)) {
    throw new UsageError(`--out and --rejects name the same file ${rejectsPath}`);
  }

  const rejects = await openNdjsonWriter(rejectsPath, 'rejects', { append: options.appendRejects === true });
  let out: NdjsonWriter | undefined;
  let plan: Plan | undefined;
  let delivery: D | undefined;
  try {
    out = options.outPath === undefined ? undefined : await openNdjsonWriter(options.outPath, 'requests');
    const onReject = (record: RejectRecord): Promise<void> => rejects.write(record);
    const onPlanReject = async (record: RejectRecord): Promise<void> => {
      await onReject(record);
      options.onRejectWritten?.(record);
    };
    const threaded = options.workerPlan !== undefined && deliver !== undefined && !options.dryRun && !options.inputs.includes(STDIN);
    plan = threaded
      ? planInWorker({ ...options, map, skip: options.workerPlan?.skip, skipItems: options.workerPlan?.skipItems, onReject: onPlanReject })
      : // loaded here only: a threaded plan keeps the CSV parser and the validator out of this thread
        (await import('./plan.js')).planRequests({ ...options, map, onReject: onPlanReject });
    if (deliver === undefined || options.dryRun) {
      for await (const request of plan.requests) await out?.write(request.body);
    } else {
      delivery = await deliver(plan.requests, { onReject });
    }
  } finally {
    await out?.close();
    await rejects.close({ removeIfEmpty: options.appendRejects !== true });
  }
  return {
    ...plan.summary,
    rejectsPath: rejects.count > 0 ? rejectsPath : undefined,
    outPath: options.outPath,
    elapsedMs: Math.round(performance.now() - started),
    delivery,
  };
}
