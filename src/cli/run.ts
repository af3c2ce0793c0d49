// The one place that maps errors and run summaries to exit statuses, and errors to messages.
import { CommanderError, type Command } from 'commander';
import { DeliveryError, InputError, UsageError } from '../errors.js';
import type { UploadSummary } from '../upload/upload.js';

export const EXIT = { ok: 0, rejected: 1, usage: 2, fatal: 3, interrupted: 130 } as const;

/** A person's mistake (a usage or input error) is 2; anything else that stops a run is 3. */
export function exitCodeFor(error: unknown): number {
  if (error instanceof UsageError || error instanceof InputError) return EXIT.usage;
  if (error instanceof DeliveryError) return EXIT.fatal;
  return EXIT.fatal;
}

/**
 * The status of a run that returned its summary: a fatal error is 2 only when it is the person's to
 * fix and nothing reached the server (3 once anything was sent, whatever its cause); then a stop
 * (130), rejected rows (1), or 0.
 */
export function exitCodeOfRun(summary: UploadSummary): number {
  const d = summary.delivery;
  const fatal = d?.fatal ?? summary.fatal;
  if (fatal !== undefined) return (d?.attempts ?? 0) > 0 ? EXIT.fatal : exitCodeFor(fatal);
  if (summary.interrupted || d?.stopped === true || d?.aborted === true) return EXIT.interrupted;
  const rejected = summary.rejected + (d === undefined ? 0 : d.items.attributes.rejected + d.items.events.rejected + d.items.purchases.rejected);
  return rejected > 0 ? EXIT.rejected : EXIT.ok;
}

function overrideExits(command: Command): void {
  command.exitOverride();
  for (const sub of command.commands) overrideExits(sub);
}

export async function runMain(program: Command, argv: string[]): Promise<void> {
  overrideExits(program);
  try {
    await program.parseAsync(argv);
  } catch (error) {
    if (error instanceof CommanderError) {
      // commander has already printed its message (or help/version, which exit 0)
      process.exitCode = error.exitCode === 0 ? 0 : EXIT.usage;
      return;
    }
    const message = error instanceof Error ? error.message : String(error);
    const known = error instanceof UsageError || error instanceof InputError || error instanceof DeliveryError;
    process.stderr.write(`track: ${message}\n`);
    if (!known && error instanceof Error && error.stack && process.env.TRACK_DEBUG) process.stderr.write(`${error.stack}\n`);
    process.exitCode = exitCodeFor(error);
  }
}
