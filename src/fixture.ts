// The emulator as a test fixture: seeded with files read as `track upload` reads them, and run around
// a callback or a shell command. Here the library composes the emulator with the uploader's planner;
// the emulator itself never imports the uploader.
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { constants } from 'node:os';
import { startEmulator as startBareEmulator, type Emulator } from './emulator/server.js';
import { resolveOptions, type EmulatorOptions, type SeedRequest } from './emulator/options.js';
import { InputError, UsageError } from './errors.js';
import type { BatchLimits } from './model/limits.js';

export interface FixtureOptions extends EmulatorOptions {
  /**
   * CSV or NDJSON files loaded before the emulator serves, and again after each reset, read as
   * `track upload` reads them. A row the upload would reject stops the start (InputError, naming the file and line).
   */
  seed?: readonly string[];
}

/** The requests `track upload` would send for these files; a rejected row is an error naming its file and line. */
export async function planSeed(files: readonly string[], limits: BatchLimits): Promise<SeedRequest[]> {
  // loaded only for a seed: the emulator alone needs none of the reading code
  const [{ checkReadable, formatOf, STDIN }, { checkHeaders }, { planEvents }] = await Promise.all([
    import('./input/source.js'),
    import('./upload/check.js'),
    import('./upload/plan.js'),
  ]);
  for (const file of files) {
    if (file === STDIN) throw new UsageError('--seed: standard input (-) cannot be a seed; give a file');
    formatOf(file);
    await checkReadable(file);
  }
  await checkHeaders({ inputs: files }, undefined);
  const requests: SeedRequest[] = [];
  for await (const event of planEvents({ inputs: files, limits })) {
    if (event.type === 'reject') {
      const { file, line, errors } = event.record;
      throw new InputError(`seed row rejected (${errors.join('; ')}); fix it or leave it out, the emulator loads a seed whole or not at all`, file, line);
    }
    if (event.type === 'request') requests.push({ body: event.request.body, origins: event.request.origins });
  }
  return requests;
}

/** Starts the emulator (see EmulatorOptions), after planning the seed files it is given. */
export async function startEmulator(options: FixtureOptions = {}): Promise<Emulator> {
  const { seed, ...rest } = options;
  if (seed === undefined || seed.length === 0) return startBareEmulator(rest);
  // the options are checked before any file is read; the seed is batched within the emulator's limits
  const planned = await planSeed(seed, resolveOptions(rest).limits);
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
  /** Called once the command runs: to pass signals on to it, say (the CLI does). */
  onSpawn?: (child: ChildProcess) => void;
}

export interface ExecResult {
  /** The command's exit code, or 128 + the signal's number when a signal ended it: what a shell reports. */
  status: number;
  code: number | null;
  signal: NodeJS.Signals | null;
}

/**
 * Starts the emulator, runs `command` through the shell with TRACK_URL and TRACK_API_KEY set, waits
 * for it, and closes the emulator (a file database is checkpointed and unlocked).
 */
export function execWithEmulator(command: string, options: ExecOptions = {}): Promise<ExecResult> {
  const { env, stdio, onStart, onSpawn, ...emulatorOptions } = options;
  return withEmulator(emulatorOptions, (emulator) => {
    onStart?.(emulator);
    return new Promise<ExecResult>((resolve, reject) => {
      const child = spawn(command, {
        shell: true,
        stdio: stdio ?? 'inherit',
        env: { ...(env ?? process.env), TRACK_URL: emulator.url, TRACK_API_KEY: emulator.apiKey },
      });
      child.once('error', reject);
      child.once('exit', (code, signal) => {
        const status = code ?? 128 + (signal === null ? 0 : constants.signals[signal]);
        resolve({ status, code, signal });
      });
      onSpawn?.(child);
    });
  });
}
