// The shard a journal holds, against the run's: a run of one shard (or of every row) is refused
// another's journal, whose header records its shard (`"shard":"2/4"`, null for every row).
import { UsageError } from '../errors.js';
import { touchedFiles } from '../records/journal.js';
import { readableJournal, splitOf } from './journal-name.js';
import type { Shard } from './shard.js';

const shardText = (shard: Shard | undefined): string | null => (shard === undefined ? null : `${shard.index}/${shard.count}`);
const shardWords = (shard: string | null): string => (shard === null ? 'every row (no --shard)' : `--shard ${shard}`);

/**
 * Refuses a run of one shard (or of every row) with the journal of another's: resumed, it would skip
 * rows that shard never sent; replaced, that shard's run could not be resumed. A journal of an
 * earlier version says no shard: a run of every row resumes it as before, and a shard only under
 * that shard's own default name.
 */
export async function checkShard(journalPath: string, resume: boolean, shard: Shard | undefined, endpoint: URL): Promise<void> {
  const found = await readableJournal(journalPath);
  if (found === undefined || (!resume && touchedFiles(found).length === 0)) return;
  const ours = shardText(shard);
  if (found.shard === undefined) {
    const named = splitOf(journalPath, endpoint);
    if (!resume || shard === undefined || (named?.index === shard.index && named.count === shard.count)) return;
    throw new UsageError(
      `the journal ${journalPath} was written by an earlier version of track, which did not record the shard of its run, so it cannot tell whether it holds ` +
        `this run's rows (--shard ${ours}): resuming another shard's journal would leave out rows never sent. Resume it with the version that wrote it, ` +
        'or give --restart to send every row of this shard again (rows the earlier run delivered are then sent twice).',
    );
  }
  if (found.shard === ours) return;
  throw new UsageError(
    `the journal ${journalPath} holds the upload of ${shardWords(found.shard)}, not of this run's ${shardWords(ours)}: ` +
      `${resume ? 'resuming it would leave out rows that run never sent' : 'this run would replace it, and that run could then never be resumed'}. ` +
      'Give each shard its own --journal (or none: each shard keeps its own by default), or --restart to drop that journal.',
  );
}
