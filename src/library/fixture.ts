// The emulator as a test fixture: seeded with files read as `track upload` reads them, and run around
// a callback or a shell command. Here the library composes the emulator with the uploader's planner;
// the emulator itself never imports the uploader.
import { startEmulator as startBareEmulator, type Emulator } from '../emulator/server.js';
import { resolveOptions, storeSeed, type EmulatorOptions, type StoredSeed } from '../emulator/options.js';
import { InputError, UsageError } from '../errors.js';
import type { RemoteSettings } from '../input/remote.js';
import type { BatchLimits } from '../model/limits.js';

export interface FixtureOptions extends EmulatorOptions {
  /**
   * Files (CSV, NDJSON, JSON, Parquet; s3:// and https:// inputs too) loaded before the emulator
   * serves, and again after each reset, read as `track upload` reads them. A row the upload would
   * reject stops the start (InputError, naming the file and line).
   */
  seed?: readonly string[];
  /** How s3:// seeds reach their store (an S3-compatible endpoint). */
  storage?: RemoteSettings;
  /** Stops reading the seed: startEmulator rejects with the signal's reason and nothing is started. */
  signal?: AbortSignal;
}

/** The requests `track upload` would send for these files; a rejected row is an error naming its file and line. */
export async function planSeed(named: readonly string[], limits: BatchLimits, signal?: AbortSignal, storage?: RemoteSettings): Promise<StoredSeed[]> {
  // loaded only for a seed: the emulator alone needs none of the reading code
  const [{ checkReadable, formatOf, STDIN }, { checkHeaders }, { planEvents }, { NamedTwiceError, resolveInputs }] = await Promise.all([
    import('../input/source.js'),
    import('../upload/check.js'),
    import('../upload/plan.js'),
    import('../upload/inputs.js'),
  ]);
  if (named.includes(STDIN)) throw new UsageError('--seed: standard input (-) cannot be a seed; give a file');
  // an input named twice, a file or an object, is refused in a seed's words
  const { inputs: files, remote } = await resolveInputs(named, storage).catch((error: unknown) => {
    throw error instanceof NamedTwiceError ? new UsageError(`--seed ${error.message}`) : error;
  });
  for (const file of files) {
    if (file === STDIN) throw new UsageError('--seed: standard input (-) cannot be a seed; give a file');
    try {
      formatOf(file);
    } catch {
      // a seed's format comes from its name only: there is no --format to give
      throw new UsageError(`--seed ${file}: cannot tell the format from the name; name it .csv, .ndjson, .jsonl or .json (each optionally .gz), or .parquet`);
    }
    await checkReadable(file).catch((error: Error) => {
      throw new UsageError(`--seed ${error.message}`);
    });
  }
  await checkHeaders({ inputs: files, remote }, undefined);
  const requests: StoredSeed[] = [];
  for await (const event of planEvents({ inputs: files, limits, remote })) {
    signal?.throwIfAborted();
    if (event.type === 'reject') {
      const { file, line, errors } = event.record;
      throw new InputError(`seed row rejected (${errors.join('; ')}); fix it or leave it out, the emulator loads a seed whole or not at all`, file, line);
    }
    if (event.type === 'request') requests.push(storeSeed(event.request));
  }
  return requests;
}

/** The base URLs (origins) of the emulators this process runs, from their start to their close. */
const running = new Set<string>();

/**
 * Whether `url` is on an emulator this process started: upload() to it keeps no journal, as
 * `track upload` keeps none to the emulator of `track emulate --exec`.
 */
export function startedHere(url: string): boolean {
  try {
    return running.has(new URL(url).origin);
  } catch {
    return false;
  }
}

/** Starts the emulator (see EmulatorOptions), after planning the seed files it is given. */
export async function startEmulator(options: FixtureOptions = {}): Promise<Emulator> {
  const { seed, signal, storage, ...rest } = options;
  signal?.throwIfAborted();
  let emulator: Emulator;
  if (seed === undefined || seed.length === 0) emulator = await startBareEmulator(rest);
  else {
    // the options are checked before any file is read; the seed is batched within the emulator's limits
    const planned = await planSeed(seed, resolveOptions(rest).limits, signal, storage);
    signal?.throwIfAborted();
    emulator = await startBareEmulator({ ...rest, seedRequests: [...(rest.seedRequests ?? []), ...planned] });
  }
  const { url, close } = emulator;
  running.add(url);
  return Object.assign(emulator, { close: () => close().finally(() => running.delete(url)) });
}
