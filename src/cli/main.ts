// The `track` program: commands are registered here; each loads its implementation only when run.
import { Command } from 'commander';
import { runMain } from './run.js';
import { registerCleanup } from './commands/cleanup.js';
import { registerEmulate } from './commands/emulate.js';
import { registerInspect } from './commands/inspect.js';
import { registerState } from './commands/state.js';
import { registerUpload } from './commands/upload.js';
import { registerValidate } from './commands/validate.js';

const program = new Command()
  .name('track')
  .description('Bulk uploader and local emulator for the POST /users/track endpoint')
  .version('0.1.0');

registerEmulate(program);
registerInspect(program);
registerCleanup(program);
registerState(program);
registerUpload(program);
registerValidate(program);

// a mistake in the flags gets its one-line error, commander's "did you mean", and where the help is:
// the whole help would scroll the error away
program.showHelpAfterError('(track --help lists every command)');
for (const command of program.commands) command.showHelpAfterError(`(track ${command.name()} --help lists every option)`);

await runMain(program, process.argv);
