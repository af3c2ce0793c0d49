// What the re-run guard (rerun.ts) asks of a delta run's inputs: whether running them again after the
// run a journal holds can store nothing twice, and what they hold, for what it says when it refuses.
import type { RemoteInputs } from '../input/remote.js';
import { formatOf, STDIN } from '../input/source.js';
import { rowsInDoubt, type ParsedJournal } from '../records/journal.js';
import { csvKinds, ndjsonMayAdd, readColumnMap } from './check.js';
import type { DeltaRun, UploadOptions } from './upload-options.js';

/** A run's options, its inputs as resolved (s3:// prefixes and globs become the objects they name). */
type Inputs = UploadOptions & { remote?: RemoteInputs };

/**
 * Whether running the inputs again, after the run a journal holds, can store nothing twice: no
 * input may hold an operation that adds (`inc`, `add`, ...: a CSV column so annotated or named, a
 * key so named in an NDJSON file); and events and purchases, which an NDJSON file may hold (unless
 * --kind attributes), are left out only with --dedupe-events, when the earlier run remembered what
 * it sent of them and left none in doubt (a killed run's requests in flight were never learned).
 * Attributes set to values are never stored twice.
 */
export async function cannotSendTwice(options: Inputs, delta: DeltaRun, earlier: ParsedJournal): Promise<boolean> {
  const { activities, adding } = await inputContents(options);
  if (adding) return false;
  if (!activities) return true;
  const inDoubt = earlier.files.some((f) => rowsInDoubt(f).size > 0);
  return delta.activities && earlier.remembers.includes('activities') && !inDoubt;
}

/**
 * What the inputs may hold, as far as sending them again goes: events or purchases (a CSV file of
 * them; an NDJSON file unless --kind attributes), and operations that add (a CSV column so
 * annotated or named, a key so named in an NDJSON file). A CSV file whose header cannot be read may
 * hold either; a Parquet file's columns are not read here: it is taken to hold an operation that adds.
 */
export async function inputContents(options: Inputs): Promise<{ activities: boolean; adding: boolean }> {
  const kinds = await csvKinds(options, options.mapFile !== undefined ? await readColumnMap(options.mapFile) : options.map);
  let activities = false;
  let adding = false;
  for (const file of options.inputs) {
    const format = formatOf(file, options.format);
    if (format === 'parquet') {
      adding = true;
      activities ||= options.kind !== 'attributes';
    } else if (format === 'csv') {
      const found = kinds.get(file);
      adding ||= found?.adding ?? true;
      activities ||= found === undefined || found.kind !== 'attributes';
    } else {
      adding ||= file === STDIN || (await ndjsonMayAdd(file, options.encoding, options.remote));
      activities ||= options.kind !== 'attributes';
    }
  }
  return { activities, adding };
}
