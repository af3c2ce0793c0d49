// The library's words in its errors: the checks it shares with the command line name flags
// (`--port`, `--resume`), and a caller who passed options reads the names it passed (`port`, `resume`).
import { DeliveryError, InputError, OutputError, SourceError, UsageError } from '../errors.js';

/** A flag as the command line names it, and what the library calls it. */
export type Words = ReadonlyMap<string, string>;

/** The emulator's flags and the options of startEmulator() that carry them. */
export const EMULATOR_WORDS: Words = new Map([
  ['--port', 'port'],
  ['--host', 'host'],
  ['--db', 'db'],
  ['--api-key', 'apiKeys'],
  ['--blocklist', 'blocklist'],
  ['--limits', 'limits'],
  ['--max-total', 'batchLimits.maxTotal'],
  ['--max-per-array', 'batchLimits.maxPerArray'],
  ['--rate-limit', 'rateLimit'],
  ['--hourly-limit', 'hourlyLimit'],
  ['--fail-rate', 'failRate'],
  ['--drop-rate', 'dropRate'],
  ['--latency', 'latency'],
  ['--max-body', 'maxBodyBytes'],
  ['--request-log', 'requestLog'],
  ['--seed', 'seed'],
  ['--exec', 'execWithEmulator()'],
]);

/** upload()'s words: each option's flag (`maxTotal` is `--max-total`), and `--no-journal` as the option that asks for it. */
export function uploadWords(options: Iterable<string>): Words {
  const words = new Map<string, string>([['--no-journal', 'journal: false']]);
  for (const name of options) words.set(`--${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`, name);
  return words;
}

const OURS = [UsageError, InputError, DeliveryError, OutputError, SourceError];

/**
 * The error with the flags of its message named as the library names them (and `standard input (-)`
 * as `inMemory`, when the inputs were rows in memory); any other error as it is. A flag is a whole
 * word: `--port` inside a file name such as `a--port.csv` stays, and so does a command to run, quoted
 * in backticks (`track state --state s.sqlite --add-key URL`).
 */
export function inLibraryWords(error: unknown, words: Words, inMemory?: string): unknown {
  if (!OURS.some((kind) => error instanceof kind)) return error;
  const ours = error as Error;
  const before = ours.message;
  const named = (text: string): string => {
    const flags = text.replace(/(?<![\w./-])--[a-z][a-z0-9-]*(?![\w-])/g, (flag) => words.get(flag) ?? flag);
    return inMemory === undefined ? flags : flags.replaceAll('standard input (-)', inMemory);
  };
  // the odd pieces are the spans quoted in backticks
  const after = before.split(/(`[^`]*`)/).map((piece, i) => (i % 2 === 1 ? piece : named(piece))).join('');
  if (after === before) return error;
  ours.message = after;
  if (ours.stack !== undefined) ours.stack = ours.stack.replace(before, after);
  return ours;
}

/** fn's result, or its error in the library's words. */
export async function speaking<T>(words: Words, fn: () => Promise<T>, inMemory?: string): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    throw inLibraryWords(error, words, inMemory);
  }
}
