// A run's plan, started in the planning thread or in this one, and ended on a stop: the run's own
// (Ctrl-C) or the delivery's, when it takes no more requests (a fatal answer, a file that cannot be
// written). A plan left running would hold the process open (its thread waits to post more) and
// write rejects after the rejects file is closed.
import type { Readable } from 'node:stream';
import type { RequestToSend } from '../transport/request.js';
import type { PlanEvent, PlanOptions } from './plan.js';
import type { StartedWorker } from '../started-worker.js';

export interface RunningPlan {
  events: AsyncIterable<PlanEvent<RequestToSend>>;
  /** Ends the plan after the row it is on; standard input is read no further. */
  stop(): void;
  /** The plan was told to stop: it may end as if done, having read only part of its inputs. */
  readonly stopped: boolean;
  /** Lets go of the run's stop signal. */
  release(): void;
}

export async function startPlan(
  options: Omit<PlanOptions, 'stopSignal' | 'stdin'>,
  how: { inWorker: boolean; stdin?: Readable; stopSignal?: AbortSignal; planner?: StartedWorker },
): Promise<RunningPlan> {
  const controller = new AbortController();
  const { signal } = controller;
  const stop = (): void => controller.abort();
  // a read of standard input waits for its next bytes, which may never come: a stop ends it (one
  // that came before the run began too, so this is in place first)
  if (how.stdin !== undefined && options.inputs.includes('-')) signal.addEventListener('abort', () => how.stdin?.destroy(), { once: true });
  if (how.stopSignal?.aborted === true) stop();
  else how.stopSignal?.addEventListener('abort', stop, { once: true });
  const events: AsyncIterable<PlanEvent<RequestToSend>> = how.inWorker
    ? (await import('./worker/plan-in-worker.js')).planInWorker({ ...options, stopSignal: signal, started: how.planner })
    : (await import('./plan.js')).planEvents({ ...options, stopSignal: signal, stdin: how.stdin });
  return {
    events: untilStopped(events, signal),
    stop,
    get stopped() {
      return signal.aborted;
    },
    release: () => how.stopSignal?.removeEventListener('abort', stop),
  };
}

/** The events; what a plan told to stop meets on its way out (standard input closed under it) ends it quietly. */
async function* untilStopped<T>(events: AsyncIterable<T>, signal: AbortSignal): AsyncGenerator<T> {
  try {
    yield* events;
  } catch (error) {
    if (!signal.aborted) throw error;
  }
}
