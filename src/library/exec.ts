// `track emulate --exec`: the emulator around a shell command in a process group of its own.
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { constants } from 'node:os';
import type { Emulator } from '../emulator/server.js';
import { UsageError } from '../errors.js';
import { startEmulator, type FixtureOptions } from './fixture.js';

export interface ExecOptions extends FixtureOptions {
  /** The command's environment, to which TRACK_URL, TRACK_API_KEY and TRACK_EMULATOR_URL are added (default: this process's). */
  env?: NodeJS.ProcessEnv;
  /** The command's standard streams (default: this process's). */
  stdio?: StdioOptions;
  /** Called once the emulator serves, before the command starts. */
  onStart?: (emulator: Emulator) => void;
  /**
   * Called once the command runs, with `signalGroup`, which sends a signal to the command's process
   * group (the shell and everything it started), and `stop`, which asks the command to end: the
   * signal to the group, then SIGKILL to the group at a second stop, or if the command has not ended
   * `killAfterMs` after the first (the CLI stops it on every signal that would end `track`).
   */
  onSpawn?: (child: ChildProcess, signalGroup: (signal: NodeJS.Signals) => void, stop: (signal: NodeJS.Signals) => void) => void;
  /** Called as stop() kills the command's group: at a second stop, or once `killAfterMs` have passed since the first. */
  onKill?: (why: 'second stop' | 'time') => void;
  /** How long the command has to end after the first stop before its group is killed (default 10 s). */
  killAfterMs?: number;
  /**
   * Aborted before the command starts (a signal while the seed loads, say): the command is not run,
   * the emulator is closed, and the result is that of the signal named by the reason (default SIGTERM).
   * Aborted while it runs: stop() with that signal (the group killed if it has not ended `killAfterMs`
   * later), and the result is the command's.
   */
  signal?: AbortSignal;
}

export interface ExecResult {
  /** The command's exit code, or 128 + the signal's number when a signal ended it: what a shell reports. */
  status: number;
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** The signal an abort's reason names (`abort('SIGINT')`), else SIGTERM. */
const signalOf = (reason: unknown): NodeJS.Signals => (typeof reason === 'string' && reason in constants.signals ? (reason as NodeJS.Signals) : 'SIGTERM');

/** The result of a command stopped by `signal` before it ran. */
function stoppedBy(reason: unknown): ExecResult {
  const signal = signalOf(reason);
  return { status: 128 + constants.signals[signal], code: null, signal };
}

/**
 * Put before the command: at a SIGHUP, SIGINT or SIGTERM passed on to its group, the shell waits for
 * the command it is running to end, then exits with that command's status (128 + N when it was 0),
 * running nothing after it. Ended at once by the signal, the shell was gone while the command still
 * stopped, and the rest of the group was sent SIGTERM: a `track upload` there was cut off (a second
 * signal) instead of ending as a stopped run does (its summary, exit 130). A trap the command sets
 * for itself replaces these.
 */
const WAIT_FOR_THE_COMMAND = (['SIGHUP', 'SIGINT', 'SIGTERM'] as const)
  .map((signal) => `trap '__track_status=$?; [ $__track_status -ne 0 ] || __track_status=${128 + constants.signals[signal]}; exit $__track_status' ${signal.slice(3)}`)
  .join('; ');

/** How long a command stopped by stop() has to end before its process group is killed. */
export const KILL_AFTER_MS = 10_000;

/** Sends `signal` to process group `pgid`; false once the group is gone. */
function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/**
 * stop() for a command's process group: the first passes its signal on and gives the command
 * `killAfterMs` to end; a second, or that time passing, kills the group. Nothing once it has ended.
 */
function stopper(pgid: number | undefined, killAfterMs: number, onKill: ExecOptions['onKill']) {
  let stops = 0;
  let timer: NodeJS.Timeout | undefined;
  let ended = false;
  const kill = (why: 'second stop' | 'time'): void => {
    clearTimeout(timer);
    if (ended || pgid === undefined) return;
    onKill?.(why);
    signalGroup(pgid, 'SIGKILL');
  };
  return {
    stop: (signal: NodeJS.Signals): void => {
      if (ended || pgid === undefined) return;
      stops += 1;
      if (stops > 1) return kill('second stop');
      signalGroup(pgid, signal);
      timer = setTimeout(() => kill('time'), killAfterMs);
    },
    ended: (): void => {
      ended = true;
      clearTimeout(timer);
    },
  };
}

/**
 * Starts the emulator, runs `command` through the shell with TRACK_URL and TRACK_API_KEY set, waits
 * for it, and closes the emulator (a file database is checkpointed and unlocked).
 *
 * The command runs in a process group of its own, so a signal passed on reaches everything it
 * started, not only the shell; once the shell has ended, whatever it left running in that group is
 * sent SIGTERM, and SIGKILL if this process exits first. A terminal's Ctrl-C reaches this process
 * only (the command is not in the terminal's foreground group), which passes it on (onSpawn's stop).
 */
export async function execWithEmulator(command: string, options: ExecOptions = {}): Promise<ExecResult> {
  const { env, stdio, onStart, onSpawn, onKill, killAfterMs, signal: abort, ...emulatorOptions } = options;
  if (command.trim() === '') throw new UsageError('--exec: expected a command to run, got an empty one');
  if (abort?.aborted) return stoppedBy(abort.reason);
  let emulator: Emulator;
  try {
    emulator = await startEmulator({ ...emulatorOptions, signal: abort });
  } catch (error) {
    if (abort?.aborted) return stoppedBy(abort.reason);
    throw error;
  }
  try {
    if (abort?.aborted) return stoppedBy(abort.reason);
    onStart?.(emulator);
    return await new Promise<ExecResult>((resolve, reject) => {
      const child = spawn(process.platform === 'win32' ? command : `${WAIT_FOR_THE_COMMAND}; ${command}`, {
        shell: true,
        // a process group of its own (and a session: node sets both), so the group can be signalled whole
        detached: true,
        stdio: stdio ?? 'inherit',
        // TRACK_EMULATOR_URL: `track upload` to it keeps no journal (cli/options.ts isExecEmulator)
        env: { ...(env ?? process.env), TRACK_URL: emulator.url, TRACK_API_KEY: emulator.apiKey, TRACK_EMULATOR_URL: emulator.url },
      });
      const pgid = child.pid;
      // whatever ends this process, the command's group is not left running
      const killGroup = (): void => void (pgid !== undefined && signalGroup(pgid, 'SIGKILL'));
      process.once('exit', killGroup);
      const stopping = stopper(pgid, killAfterMs ?? KILL_AFTER_MS, onKill);
      const onAbort = (): void => stopping.stop(signalOf(abort?.reason));
      abort?.addEventListener('abort', onAbort, { once: true });
      child.once('error', (error) => {
        stopping.ended();
        abort?.removeEventListener('abort', onAbort);
        process.off('exit', killGroup);
        reject(error);
      });
      child.once('exit', (code, signal) => {
        stopping.ended();
        abort?.removeEventListener('abort', onAbort);
        // the shell is gone; what it started in the background goes with it (SIGKILL at exit if it stays)
        if (pgid !== undefined) signalGroup(pgid, 'SIGTERM');
        if (pgid === undefined || !signalGroup(pgid, 0)) process.off('exit', killGroup);
        const status = code ?? 128 + (signal === null ? 0 : constants.signals[signal]);
        resolve({ status, code, signal });
      });
      if (pgid !== undefined) onSpawn?.(child, (sig) => void signalGroup(pgid, sig), stopping.stop);
    });
  } finally {
    await emulator.close();
  }
}
