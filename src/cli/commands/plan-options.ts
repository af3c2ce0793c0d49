// The options `track validate` and `track upload` share: how to read the files and how to batch
// them, turned into the options of upload(). Kept light: the implementation loads only when run.
import { Option, type Command } from 'commander';
import { UsageError } from '../../errors.js';
import { resolveLimits, type LimitProfileName } from '../../model/limits.js';
import type { ArrayName } from '../../model/types.js';
import { INPUT_ENCODINGS, type InputEncoding } from '../../input/decode.js';
import type { InputFormat } from '../../input/source.js';
import type { UploadOptions } from '../../upload/upload.js';

export interface PlanFlags {
  format?: InputFormat;
  encoding: InputEncoding;
  kind?: ArrayName;
  map?: string;
  limits: LimitProfileName;
  maxTotal?: number;
  maxPerArray?: number;
  rejects?: string;
  out?: string;
  json?: boolean;
}

import { positiveInteger } from '../options.js';
export { positiveInteger };

export function addPlanOptions(command: Command): Command {
  return command
    .addOption(new Option('--format <format>', 'read every input as this format (needed for -)').choices(['csv', 'ndjson']))
    .addOption(
      new Option('--encoding <encoding>', 'the encoding of every input; latin1 is ISO-8859-1 (0x80 is U+0080, not €)')
        .choices([...INPUT_ENCODINGS])
        .default('utf-8'),
    )
    .addOption(
      new Option('--kind <kind>', 'what the rows are (default: from the columns of each file, or the fields of each line)').choices([
        'attributes',
        'events',
        'purchases',
      ]),
    )
    .option('--map <file>', 'JSON file that renames and types CSV columns: {"Zip": "zip:string", "Notes": null}')
    .addOption(new Option('--limits <profile>', 'batch limit profile: mau (50 items a request) or legacy (75 per array)').choices(['mau', 'legacy']).default('mau'))
    .option('--max-total <n>', 'at most this many items in a request, across the arrays', positiveInteger('--max-total'))
    .option('--max-per-array <n>', 'at most this many items in each array of a request', positiveInteger('--max-per-array'))
    .option('--rejects <file>', 'where rejected rows go, as NDJSON (default: <first input>.rejects.ndjson beside it)')
    .option('--out <file>', 'also write each request body to this file, one a line: in a dry run each planned one, in an upload each as it is sent')
    .option('--json', 'print the summary as JSON');
}

/** The options of upload() the flags ask for; `stdin` and where to send are added by the caller. */
export function planOptionsFrom(files: string[], flags: PlanFlags): UploadOptions {
  return {
    inputs: files,
    format: flags.format,
    encoding: flags.encoding,
    kind: flags.kind,
    mapFile: flags.map,
    limits: resolveLimits(flags.limits, { maxTotal: flags.maxTotal, maxPerArray: flags.maxPerArray }),
    rejectsPath: flags.rejects,
    outPath: flags.out,
  };
}
