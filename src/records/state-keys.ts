// Which API keys the delta state learned each target through. Many workspaces of the service (a
// staging one and a production one) share one URL, each with keys of its own: what the state learned
// through one workspace's key says nothing of another's profiles. A key is kept as its fingerprint
// (never the key), per target; a delivery with a key the target does not know is refused before
// anything is posted, as neither "same workspace" (a rotated key) nor "another one" is safe to guess.
import type Database from '../sqlite.js';
import { UsageError } from '../errors.js';
import { FORMAT, targetId, withStateFile } from './state-file.js';

export { keyFingerprint } from '../transport/api-key.js';

/** The fingerprints the state holds for a target (none in a file of an earlier format, which has no table of them). */
export function keysOf(db: Database.Database, format: string, target: number): string[] {
  if (format !== FORMAT) return [];
  return db.prepare('SELECT key FROM target_keys WHERE target = ? ORDER BY key').pluck().all(target) as string[];
}

/** A word of a command as a shell takes it when pasted: quoted when it holds anything but plain characters. */
const shellWord = (text: string): string => (/^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", "'\\''")}'`);

/** The command that records the key of --api-key or TRACK_API_KEY for a target of the state at `path`. */
export const addKeyCommand = (path: string, url: string): string => `track state --state ${shellWord(path)} --add-key ${shellWord(url)}`;

/** What to do with a key the state does not know the target under: the two ways on. */
function waysOn(path: string, url: string): string {
  return (
    `if this key is of the same workspace (a new or second key), record it with \`${addKeyCommand(path, url)}\` ` +
    '(the key from --api-key or TRACK_API_KEY, as upload takes it); if it is of another workspace, give this upload its own --state'
  );
}

/**
 * What to say of a run whose key the state did not learn its target through (`known` are the keys it
 * did): `outcome` is what became of the run (a delivery sent nothing; a dry run tells what one would do).
 */
export function otherKeysMessage(path: string, url: string, known: readonly string[], key: string, outcome: string): string {
  return (
    `--state ${path} learned ${url} through another API key (${known.join(', ')}), not this one (${key}); ` +
    `workspaces may share a URL, and what the state holds of one says nothing of another, so ${outcome}: ${waysOn(path, url)}`
  );
}

/**
 * The key check of a delivery to `url` under the key of fingerprint `key`, at its opening (nothing
 * posted yet; the caller holds the file): a target known only under other keys is refused (a usage
 * error). A target known under no key yet is adopted now when it learned something before (a file
 * of an earlier version); else the key is recorded with the first thing the run learns (a request
 * accepted, or one the server may have applied: its values held in doubt), so that a run whose key
 * the server refused (a mistyped one) ties the target to nothing. Returns whether the key is known,
 * still to be recorded (recordKey: 'later'), or was adopted now (the run says so: adoptedMessage).
 */
export function admitKey(db: Database.Database, path: string, url: string, key: string): 'known' | 'later' | 'adopted' {
  const target = db.prepare('SELECT id, updated FROM targets WHERE url = ?').get(url) as { id: number; updated: string | null } | undefined;
  if (target === undefined) return 'later';
  const known = keysOf(db, FORMAT, target.id);
  if (known.includes(key)) return 'known';
  if (known.length > 0) throw new UsageError(otherKeysMessage(path, url, known, key, 'nothing was sent'));
  if (target.updated === null) return 'later';
  recordKey(db, target.id, key);
  return 'adopted';
}

/**
 * What to say of a target the state learned before it kept keys (a file of an earlier version), and
 * a run with the key of fingerprint `key`: a delivery tied it to that key (`done`), a dry run tells
 * that a delivery would. Said, not refused: the state cannot tell which key that was.
 */
export function adoptedMessage(path: string, url: string, key: string, done: boolean): string {
  const before = `--state ${path} learned ${url} before it kept API keys (an earlier version of track)`;
  if (!done) {
    return `${before}: an upload with this key (${key}) would compare with what it holds and tie it to that key; if it learned the target through another workspace's key, give this upload its own --state`;
  }
  return (
    `${before}: this run compared with what it holds and tied it to this run's key (${key}); if it learned the target through another workspace's key, ` +
    `this run left out what the state held: run it again with its own --state, and untie the shared one with \`track state --state ${shellWord(path)} --forget ${shellWord(url)}\` (which forgets what it holds of the target)`
  );
}

/** Records that the state learns the target through this key (once). */
export function recordKey(db: Database.Database, target: number, key: string): void {
  db.prepare('INSERT OR IGNORE INTO target_keys (target, key) VALUES (?, ?)').run(target, key);
}

/**
 * Records a key for a target the state knows (`track state --add-key`, holding the file meanwhile):
 * false when it held it already. A target the state does not know is a usage error: its first
 * delivery records its own key.
 */
export function addTargetKey(path: string, url: string, key: string): boolean {
  return withStateFile(path, (db) => {
    const id = targetId(db, url);
    if (id === undefined) {
      const urls = db.prepare('SELECT url FROM targets ORDER BY url').pluck().all() as string[];
      const knows = urls.length === 0 ? 'it holds no target yet' : `it knows ${urls.join(', ')}`;
      throw new UsageError(`--state ${path} holds nothing of ${url} (${knows}): a key is added to a target the state knows; a first upload to a new target records its own key`);
    }
    if (keysOf(db, FORMAT, id).includes(key)) return false;
    recordKey(db, id, key);
    return true;
  });
}
