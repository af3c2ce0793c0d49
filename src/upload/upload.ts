// `track upload` and `track validate`: input files -> rows -> checked items -> planned requests ->
// delivered to the target, or, in a dry run (no target), counted and written to --out. Every row is
// accounted for: in a request, in the rejects file, or left out on resume because it was settled.
// Here the run's inputs are resolved and its target and journal checked; the run itself, step by
// step, is upload-run.ts; what it takes and gives is upload-options.ts.
import { existsSync } from 'node:fs';
import { UsageError } from '../errors.js';
import { STDIN } from '../input/source.js';
import type { ParsedJournal } from '../records/journal.js';
import { checkApiKey, keyFingerprint } from '../transport/api-key.js';
import { resolveInputs } from './inputs.js';
import type { DeltaRun, UploadOptions, UploadSummary } from './upload-options.js';
import type { ResolvedRun } from './upload-open.js';
import { uploadChecked } from './upload-run.js';
import type { StartedWorker } from '../started-worker.js';

export type { FileSummary, PlanSummary } from './summary.js';
export type { DeltaRun, ReadProgress, SendOptions, UploadOptions, UploadSummary } from './upload-options.js';

export async function upload(options: UploadOptions): Promise<UploadSummary> {
  const started = performance.now();
  // s3:// prefixes and globs become the objects they name; the defaults are named after the input given
  const named = options.inputs;
  if (named.length === 0) throw new UsageError('give at least one input file (or - for standard input)');
  // (a stop ends a listing or a read of an object under way in this thread; the planning thread ends with the plan)
  const resolved = await resolveInputs(named, { ...options.storage, stop: options.stopSignal });
  // the threads start now, their modules loading while the run is checked and its files opened (the
  // first request goes about a tenth of a second sooner): first the state writer's, for a delivery
  // that writes the state (the run waits for it to open the file before its plan starts), then the
  // planning thread (a run that does not plan in it ends it)
  const stateWriter = options.send !== undefined && options.delta !== undefined ? await startStateWriterAhead() : undefined;
  let planner: StartedWorker | undefined;
  try {
    planner = plansInWorker(options, resolved.inputs) ? await startPlannerAhead(options.delta) : undefined;
    if (options.send !== undefined) loadSendingAhead();
    return await uploadResolved(options, { started, named, ...resolved, planner, stateWriter });
  } finally {
    planner?.release();
    stateWriter?.release();
  }
}

/** The state writer's thread started ahead; none when one cannot be started now (the run then starts its own, and says why it cannot). */
async function startStateWriterAhead(): Promise<StartedWorker | undefined> {
  try {
    const { startStateWriter } = await import('../records/state-writer.js');
    return startStateWriter();
  } catch {
    return undefined;
  }
}

/**
 * The modules that send (the HTTP client's among them, about a tenth of a second of this thread's
 * time) loaded while the planning thread loads its own, where they would load once the plan has
 * started, and hold it up: the first chunk's requests would wait for them. A module that cannot be
 * loaded fails where the delivery asks for it (upload-run.ts), which says why.
 */
function loadSendingAhead(): void {
  for (const loading of [import('../transport/deliver.js'), import('../transport/http-client.js')]) loading.catch(() => undefined);
}

/** A planning thread started ahead (for a plan with a delta stage when `delta` is given); none when one cannot be started now (the plan then starts its own, and says why it cannot). */
async function startPlannerAhead(delta: DeltaRun | undefined): Promise<StartedWorker | undefined> {
  try {
    const { startPlanner } = await import('./worker/plan-in-worker.js');
    return startPlanner(delta?.attributes === true, delta !== undefined);
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

async function uploadResolved(
  options: UploadOptions,
  run: ResolvedRun,
): Promise<UploadSummary> {
  const { send } = options;
  const { named, inputs, remote } = run;

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
