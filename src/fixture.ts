// The emulator as a test fixture: seeded with files read as `track upload` reads them, and run around
// a callback or a shell command. Here the library composes the emulator with the uploader's planner;
// the emulator itself never imports the uploader.
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { constants } from 'node:os';
import { startEmulator as startBareEmulator, type Emulator } from './emulator/server.js';
import { resolveOptions, storeSeed, type EmulatorOptions, type StoredSeed } from './emulator/options.js';
import { InputError, UsageError } from './errors.js';
import type { BatchLimits } from './model/limits.js';

export interface FixtureOptions extends EmulatorOptions {
  /**
   * CSV or NDJSON files loaded before the emulator serves, and again after each reset, read as
   * `track upload` reads them. A row the upload would reject stops the start (InputError, naming the file and line).
   */
  seed?: readonly string[];
  /** Stops reading the seed: startEmulator rejects with the signal's reason and nothing is started. */
  signal?: AbortSignal;
}

/** The requests `track upload` would send for these files; a rejected row is an error naming its file and line. */
export async function planSeed(files: readonly string[], limits: BatchLimits, signal?: AbortSignal): Promise<StoredSeed[]> {
  // loaded only for a seed: the emulator alone needs none of the reading code
  const [{ checkReadable, formatOf, STDIN }, { checkHeaders }, { planEvents }] = await Promise.all([
    import('./input/source.js'),
    import('./upload/check.js'),
    import('./upload/plan.js'),
  ]);
  for (const file of files) {
    if (file === STDIN) throw new UsageError('--seed: standard input (-) cannot be a seed; give a file');
    try {
      formatOf(file);
    } catch {
      // a seed's format comes from its name only: there is no --format to give
      throw new UsageError(`--seed ${file}: cannot tell the format from the name; name it .csv, .ndjson or .jsonl (each optionally .gz)`);
    }
    await checkReadable(file).catch((error: Error) => {
      throw new UsageError(`--seed ${error.message}`);
    });
  }
  await checkHeaders({ inputs: files }, undefined);
  const requests: StoredSeed[] = [];
  for await (const event of planEvents({ inputs: files, limits })) {
    signal?.throwIfAborted();
    if (event.type === 'reject') {
      const { file, line, errors } = event.record;
      throw new InputError(`seed row rejected (${errors.join('; ')}); fix it or leave it out, the emulator loads a seed whole or not at all`, file, line);
    }
    if (event.type === 'request') requests.push(storeSeed(event.request));
  }
  return requests;
}

/** Starts the emulator (see EmulatorOptions), after planning the seed files it is given. */
export async function startEmulator(options: FixtureOptions = {}): Promise<Emulator> {
  const { seed, signal, ...rest } = options;
  signal?.throwIfAborted();
  if (seed === undefined || seed.length === 0) return startBareEmulator(rest);
  // the options are checked before any file is read; the seed is batched within the emulator's limits
  const planned = await planSeed(seed, resolveOptions(rest).limits, signal);
  signal?.throwIfAborted();
  return startBareEmulator({ ...rest, seedRequests: [...(rest.seedRequests ?? []), ...planned] });
}

/** Runs fn with a started emulator, and closes the emulator when fn settles, whatever it did. */
export async function withEmulator<T>(options: FixtureOptions, fn: (emulator: Emulator) => Promise<T> | T): Promise<T> {
  const emulator = await startEmulator(options);
  try {
    return await fn(emulator);
  } finally {
    await emulator.close();
  }
}

export interface ExecOptions extends FixtureOptions {
  /** The command's environment, to which TRACK_URL and TRACK_API_KEY are added (default: this process's). */
  env?: NodeJS.ProcessEnv;
  /** The command's standard streams (default: this process's). */
  stdio?: StdioOptions;
  /** Called once the emulator serves, before the command starts. */
  onStart?: (emulator: Emulator) => void;
  /**
   * Called once the command runs, with `signalGroup`, which sends a signal to the command's process
   * group (the shell and everything it started): to pass signals on to it, say (the CLI does).
   */
  onSpawn?: (child: ChildProcess, signalGroup: (signal: NodeJS.Signals) => void) => void;
  /**
   * Aborted before the command starts (a signal while the seed loads, say): the command is not run,
   * the emulator is closed, and the result is that of the signal named by the reason (default SIGTERM).
   */
  signal?: AbortSignal;
}

export interface ExecResult {
  /** The command's exit code, or 128 + the signal's number when a signal ended it: what a shell reports. */
  status: number;
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** The result of a command stopped by `signal` before it ran. */
function stoppedBy(reason: unknown): ExecResult {
  const signal = typeof reason === 'string' && reason in constants.signals ? (reason as NodeJS.Signals) : 'SIGTERM';
  return { status: 128 + constants.signals[signal], code: null, signal };
}

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
 * Starts the emulator, runs `command` through the shell with TRACK_URL and TRACK_API_KEY set, waits
 * for it, and closes the emulator (a file database is checkpointed and unlocked).
 *
 * The command runs in a process group of its own, so a signal passed on reaches everything it
 * started, not only the shell; once the shell has ended, whatever it left running in that group is
 * sent SIGTERM, and SIGKILL if this process exits first. A terminal's Ctrl-C reaches this process
 * only (the command is not in the terminal's foreground group), which passes it on.
 */
export async function execWithEmulator(command: string, options: ExecOptions = {}): Promise<ExecResult> {
  const { env, stdio, onStart, onSpawn, signal: abort, ...emulatorOptions } = options;
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
      const child = spawn(command, {
        shell: true,
        // a process group of its own (and a session: node sets both), so the group can be signalled whole
        detached: true,
        stdio: stdio ?? 'inherit',
        env: { ...(env ?? process.env), TRACK_URL: emulator.url, TRACK_API_KEY: emulator.apiKey },
      });
      const pgid = child.pid;
      // whatever ends this process, the command's group is not left running
      const killGroup = (): void => void (pgid !== undefined && signalGroup(pgid, 'SIGKILL'));
      process.once('exit', killGroup);
      child.once('error', (error) => {
        process.off('exit', killGroup);
        reject(error);
      });
      child.once('exit', (code, signal) => {
        // the shell is gone; what it started in the background goes with it (SIGKILL at exit if it stays)
        if (pgid !== undefined) signalGroup(pgid, 'SIGTERM');
        if (pgid === undefined || !signalGroup(pgid, 0)) process.off('exit', killGroup);
        const status = code ?? 128 + (signal === null ? 0 : constants.signals[signal]);
        resolve({ status, code, signal });
      });
      if (pgid !== undefined) onSpawn?.(child, (sig) => void signalGroup(pgid, sig));
    });
  } finally {
    await emulator.close();
  }
}
