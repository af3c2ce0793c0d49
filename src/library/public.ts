// The emulator's functions as the package exports them: the options checked by name (a typo such as
// `rateLimt` is refused, not ignored) and every error in the library's words. The CLI calls the
// functions of fixture.ts and exec.ts, whose messages name its flags.
import type { Emulator } from '../emulator/server.js';
import { UsageError } from '../errors.js';
import { execWithEmulator as execBare, type ExecOptions, type ExecResult } from './exec.js';
import { startEmulator as startBare, type FixtureOptions } from './fixture.js';
import { EMULATOR_WORDS, speaking } from './words.js';

/** Every option of FixtureOptions (the compiler holds this list to the type), then ExecOptions'. */
const FIXTURE_KEYS = {
  port: true, host: true, db: true, apiKeys: true, blocklist: true, limits: true, batchLimits: true, rateLimit: true, hourlyLimit: true,
  failRate: true, dropRate: true, latency: true, maxBodyBytes: true, arrayCap: true, requestTimeoutMs: true, log: true, requestLog: true,
  seedRequests: true, seed: true, storage: true, signal: true,
} satisfies Record<keyof FixtureOptions, true>;
const EXEC_KEYS = { ...FIXTURE_KEYS, env: true, stdio: true, onStart: true, onSpawn: true, onKill: true, killAfterMs: true } satisfies Record<keyof ExecOptions, true>;
const EMULATOR_OPTIONS = new Set(Object.keys(FIXTURE_KEYS));
const EXEC_OPTIONS = new Set(Object.keys(EXEC_KEYS));

/** The options, refused when they are not an object, name an option there is not, or give seed as one string. */
function checked<T extends object>(fn: string, options: T | undefined, known: ReadonlySet<string>): T {
  if (options === undefined) return {} as T;
  if (typeof options !== 'object' || options === null || Array.isArray(options)) throw new UsageError(`${fn}: give one object of options, such as { seed: ['users.csv'] }`);
  for (const name of Object.keys(options)) if (!known.has(name)) throw new UsageError(`${fn}: unknown option ${name}`);
  const seed = (options as FixtureOptions).seed;
  if (seed !== undefined && !Array.isArray(seed)) throw new UsageError(`${fn}: seed is a list of files, such as seed: ['users.csv'], got ${JSON.stringify(seed)}`);
  return options;
}

/** Starts the emulator (see EmulatorOptions), after planning the seed files it is given. */
export function startEmulator(options?: FixtureOptions): Promise<Emulator> {
  return speaking(EMULATOR_WORDS, () => startBare(checked('startEmulator()', options, EMULATOR_OPTIONS)));
}

/** Runs fn with a started emulator, and closes the emulator when fn settles, whatever it did. */
export async function withEmulator<T>(options: FixtureOptions, fn: (emulator: Emulator) => Promise<T> | T): Promise<T> {
  const emulator = await speaking(EMULATOR_WORDS, () => startBare(checked('withEmulator()', options, EMULATOR_OPTIONS)));
  try {
    return await fn(emulator);
  } finally {
    await emulator.close();
  }
}

/**
 * Starts the emulator, runs `command` through the shell with TRACK_URL and TRACK_API_KEY set, waits
 * for it, and closes the emulator; see ExecOptions.
 */
export function execWithEmulator(command: string, options?: ExecOptions): Promise<ExecResult> {
  return speaking(EMULATOR_WORDS, async () => {
    if (typeof command !== 'string') throw new UsageError(`execWithEmulator(): the command is a string for the shell, got ${JSON.stringify(command)}`);
    return execBare(command, checked('execWithEmulator()', options, EXEC_OPTIONS));
  });
}
