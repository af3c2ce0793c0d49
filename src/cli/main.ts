// The `track` program: commands are registered here; each loads its implementation only when run.
import { Command } from 'commander';
import { signalsSeen } from './held-signals.js';
import { runMain } from './run.js';
import { registerCleanup } from './commands/cleanup.js';
import { registerEmulate } from './commands/emulate.js';
import { registerInspect } from './commands/inspect.js';
import { registerReport } from './commands/report.js';
import { registerState } from './commands/state.js';
import { registerUpload } from './commands/upload.js';
import { registerValidate } from './commands/validate.js';

// the object-storage client's notice about the Node versions its next releases will need is none of
// the person's business here: track runs on the Node it says it does (read by the client from this process's environment)
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const program = new Command()
  .name('track')
  .description('Bulk uploader and local emulator for the POST /users/track endpoint')
  .version('0.1.0');

registerEmulate(program);
registerInspect(program);
registerCleanup(program);
registerReport(program);
registerState(program);
registerUpload(program);
registerValidate(program);

// a mistake in the flags gets its one-line error, commander's "did you mean", and where the help is:
// the whole help would scroll the error away
program.showHelpAfterError('(track --help lists every command)');
for (const command of program.commands) command.showHelpAfterError(`(track ${command.name()} --help lists every option)`);
for (const command of [program, ...program.commands]) hintUnknownOptions(command);

/** `--emptyAsNull`, `--EMPTY_AS_NULL`, `--dry-run=yes` -> `--empty-as-null`, `--dry-run`: how a flag is written elsewhere, as ours are. */
const asOurs = (flag: string): string =>
  flag
    .replace(/=.*$/s, '')
    .replace(/([a-z0-9])([A-Z])/g, '$1-$2')
    .replace(/_/g, '-')
    .toLowerCase();

/**
 * Commander's "did you mean" goes by edit distance, which misses a flag written as a config key is
 * (`--emptyAsNull`), in capitals or with a value it takes none of, and says nothing of an option of a
 * command given before the command (`track --dry-run upload`): those are told first.
 */
function hintUnknownOptions(command: Command): void {
  const longs = (c: Command): string[] => c.options.flatMap((option) => (option.hidden ? [] : (option.long ?? [])));
  const commanderHint = (command as unknown as { unknownOption(flag: string): void }).unknownOption.bind(command);
  Object.assign(command, {
    unknownOption(flag: string): void {
      const ours = asOurs(flag);
      const error = (hint: string) => command.error(`error: unknown option '${flag}'\n(${hint})`, { code: 'commander.unknownOption' });
      if (flag.startsWith('--') && ours !== flag && longs(command).includes(ours)) error(`Did you mean ${ours}?`);
      // the command the line gives, when it has the option; else every command that has it
      const given = program.commands.filter((c) => process.argv.slice(2).includes(c.name()) && longs(c).includes(ours));
      const owners = command !== program ? [] : given.length > 0 ? given : program.commands.filter((c) => longs(c).includes(ours));
      if (owners.length > 0) error(`${ours} is an option of ${owners.map((c) => `track ${c.name()}`).join(', ')}: give it after the command`);
      commanderHint(flag);
    },
  });
}

// a signal that came while the modules above loaded is held before the command begins (held-signals.ts)
await signalsSeen();
await runMain(program, process.argv);
