// One run at a time on a resume journal: a delivery holds `<journal>.lock` (lock-file.ts) from before
// the re-run guard reads the journal until the journal is closed, so a second run on it, while the
// first is still sending, is refused at once instead of taking that run for a killed one (and
// resuming it, sending its rows in flight again). A lock left by a killed run is taken over.
import { FileInUseError, lockFile } from '../lock-file.js';

/**
 * What a run that stops on a usage error before anything was sent puts back (README, exit 2): the
 * journal of the run before a new one, kept aside under this name until a row is recorded as sent
 * or the run closes (a kill meanwhile leaves the new journal in place, as ever: journal.ts). A second
 * name of the journal while it is made: not another name the lock would miss.
 */
export const asideOf = (journalPath: string): string => `${journalPath}.before.journal`;

/** Takes the journal for a delivery: a second one on the same journal is refused (a usage error: exit 2) until this one gives it back. */
export function lockJournal(path: string): () => void {
  return lockFile(path, {
    purpose: 'the lock that keeps a second run off the journal',
    // (a restart killed while it replaced the journal leaves the one before under this second name: journal.ts)
    ownNames: (file) => [asideOf(file)],
    inUse: (file, lock, owner) =>
      new FileInUseError(
        file,
        lock,
        owner,
        (who, here) =>
          `the journal ${file} is in use by another upload: ${who}, started ${owner.since}. One run at a time on a journal, and nothing was sent: ` +
          'wait for it to end, then run again (--resume goes on from where it stopped, if it did not finish)' +
          (here ? '.' : `; if it is no longer running, delete ${lock}.`),
      ),
  });
}
