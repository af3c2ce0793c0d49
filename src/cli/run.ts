// The one place that maps errors to messages and exit codes.
import { CommanderError, type Command } from 'commander';
import { DeliveryError, InputError, UsageError } from '../errors.js';

export const EXIT = { ok: 0, rejected: 1, usage: 2, fatal: 3, interrupted: 130 } as const;

export function exitCodeFor(error: unknown): number {
  if (error instanceof UsageError || error instanceof InputError) return EXIT.usage;
  if (error instanceof DeliveryError) return EXIT.fatal;
  return EXIT.fatal;
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
