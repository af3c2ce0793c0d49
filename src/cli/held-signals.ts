// A SIGINT, SIGTERM or SIGHUP from the process's first moment is held for the command that takes it: the
// CLI's modules take a tenth of a second to load, and a scheduler that cancels a job at once must
// still get a run that ends as a stopped run does (its summary, its events, exit 130), not a process
// killed before its handlers were in place. Loaded by bin/track.js before anything else: it imports
// nothing.

/** EXIT.interrupted (run.ts): what a second signal ends the process with. */
export const INTERRUPTED = 130;

/** The signals that stop a run: Ctrl-C, a scheduler's SIGTERM, and SIGHUP (its terminal closed, an SSH session dropped). */
export const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/**
 * A SIGTERM again within this long is the first one told twice, not a second: `timeout` signals its
 * command and then its whole process group, which holds the command too. (Two Ctrl-C, SIGINT, typed
 * however fast are a person insisting.)
 */
export const ECHO_MS = 100;

let holding = false;
let held: NodeJS.Signals | undefined;
let heldAt = 0;

/** Whether `signal` is the `first`, which came at `at` (performance.now()), told again. */
export const isEcho = (signal: NodeJS.Signals, first: NodeJS.Signals | undefined, at: number): boolean => signal === 'SIGTERM' && first === 'SIGTERM' && performance.now() - at < ECHO_MS;

function hold(signal: NodeJS.Signals): void {
  // a second one before any command took the first ends the process at once, as a second Ctrl-C does;
  // a hangup is not a person insisting (a closed terminal's shell and its kernel may each send one)
  if (held !== undefined) {
    if (signal !== 'SIGHUP' && !isEcho(signal, held, heldAt)) process.exit(INTERRUPTED);
    return;
  }
  held = signal;
  heldAt = performance.now();
}

/** From now on a first SIGINT, SIGTERM or SIGHUP is kept for takeHeldSignal() (a signal listener keeps no process alive). */
export function holdStopSignals(): void {
  if (holding) return;
  holding = true;
  for (const signal of STOP_SIGNALS) process.on(signal, hold);
}

/** Stops holding: the signal held, if any, is returned and forgotten. */
function stopHolding(): NodeJS.Signals | undefined {
  if (holding) for (const signal of STOP_SIGNALS) process.off(signal, hold);
  holding = false;
  const signal = held;
  held = undefined;
  return signal;
}

/**
 * Resolves after one turn of the event loop, in which a signal that came meanwhile reaches its
 * handler. From Node 22 on, modules load with no turn between them: a signal sent while the program's
 * or a command's modules load is seen only at the next turn, which came after the command had begun
 * (an emulator's --exec command was run). Awaited once they are loaded, before a signal is taken.
 */
export const signalsSeen = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * A command that takes stops calls this once its own handlers are on (a signal from then on reaches
 * them, never the default that kills the process): the signal that came before them, to act on now.
 */
export const takeHeldSignal = (): { signal: NodeJS.Signals; at: number } | undefined => {
  const at = heldAt;
  const signal = stopHolding();
  return signal === undefined ? undefined : { signal, at };
};

/** A signal has come and nothing has taken it yet. */
export const signalHeld = (): boolean => held !== undefined;

/**
 * A command that takes no stop (inspect, state, report, cleanup, a preview that may wait on standard
 * input) is ended by a signal as if nothing had held it: at once, by that signal.
 */
export function releaseHeldSignal(): void {
  const signal = stopHolding();
  if (signal !== undefined) process.kill(process.pid, signal);
}

/**
 * The command line ended without a command taking the signal (--help, a usage error found before the
 * run began): the process ends as it was ending, with its status; the signal found nothing to stop.
 */
export const dropHeldSignal = (): void => void stopHolding();
