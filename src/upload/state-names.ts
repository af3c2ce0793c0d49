// The delta state keeps each target under the URL it was given (`http://localhost:4000/users/track`),
// so the same server named another way (`http://127.0.0.1:4000`) is a target it knows nothing of, and
// a --delta run sends everything again. When that happens, the run says which name the state knows.
// It also keeps the keys it learned each target through: a dry run with a key it does not know the
// target under says that a delivery with that key would stop. A resume journal keeps the key of its
// run too: a run under another key does not resume it, unless the state ties both keys to the target.
import { existsSync } from 'node:fs';
import { UsageError } from '../errors.js';
import type { ParsedJournal } from '../records/journal.js';
import { hostname, networkInterfaces } from 'node:os';
import { listState, targetKeys } from '../records/state.js';
import { addKeyCommand, adoptedMessage, otherKeysMessage } from '../records/state-keys.js';

const ENDPOINT_PATH = '/users/track';

/** Names and addresses of this machine: a URL naming any of them reaches the same server on the same port. */
function isThisMachine(host: string): boolean {
  const name = host.replace(/^\[|\]$/g, '').replace(/\.$/, '').toLowerCase();
  if (name === 'localhost' || name.endsWith('.localhost') || /^127\.\d+\.\d+\.\d+$/.test(name)) return true;
  if (name === '::1' || name === '0.0.0.0' || name === '::' || name === hostname().toLowerCase()) return true;
  return Object.values(networkInterfaces()).some((addresses) => addresses?.some((address) => address.address.toLowerCase() === name) === true);
}

/** Whether two targets are one endpoint on one host under two names. */
export function sameHostOtherName(a: string, b: string): boolean {
  if (a === b) return false;
  let x: URL;
  let y: URL;
  try {
    x = new URL(a);
    y = new URL(b);
  } catch {
    return false;
  }
  if (x.protocol !== y.protocol || x.port !== y.port || x.pathname !== y.pathname) return false;
  const plain = (host: string): string => host.replace(/\.$/, '');
  return plain(x.hostname) === plain(y.hostname) || (isThisMachine(x.hostname) && isThisMachine(y.hostname));
}

/**
 * A note for a run whose state knows nothing of `target` but knows the same host under another
 * name (read through the state's own listing), or undefined.
 */
export function otherNameNote(statePath: string, target: string): string | undefined {
  if (!existsSync(statePath)) return undefined;
  const other = listState(statePath).find((known) => known.users + known.activities > 0 && sameHostOtherName(known.url, target));
  if (other === undefined) return undefined;
  const url = other.url.endsWith(ENDPOINT_PATH) ? other.url.slice(0, -ENDPOINT_PATH.length) : other.url;
  return (
    `--state ${statePath} knows nothing of ${target}, but knows ${other.url}, the same host under another name: ` +
    `this run compares with nothing and sends every value again; if they are one server, give --url ${url}`
  );
}

/**
 * A note for a dry run whose key (its fingerprint) the state did not learn `target` through, when it
 * learned it through others: a delivery with it would stop before sending. The estimate compares
 * with the state all the same, as that delivery would once the key is recorded. A target the state
 * knows (`stateKnown`) through no key learned before keys were kept: a delivery would tie it to this one.
 */
export function otherKeyNote(statePath: string, target: string, key: string, stateKnown: boolean): string | undefined {
  const known = targetKeys(statePath, target);
  // a target that learned with no key (a file of an earlier version) is tied to the first key that delivers
  if (known === undefined) return stateKnown ? adoptedMessage(statePath, target, key, false) : undefined;
  if (known.includes(key)) return undefined;
  return otherKeysMessage(statePath, target, known, key, 'an upload with this key would stop before sending anything (this estimate compares with what the state holds all the same)');
}

/**
 * A resumed run under another API key (fingerprint `key`) than the run its journal holds: refused,
 * nothing sent, as the rows that run settled went to its key's workspace, which may not be this
 * one's; unless the delta state at `statePath` ties both keys to the target (`track state
 * --add-key`: one workspace). A journal of an earlier version names no key; one of a run that sent
 * nothing is started anew (checkTarget).
 */
export function checkResumeKey(journalPath: string, earlier: ParsedJournal, target: string, key: string, statePath: string | undefined): void {
  if (earlier.key === undefined || earlier.key === key) return;
  const known = statePath === undefined ? undefined : targetKeys(statePath, target);
  if (known !== undefined && known.includes(earlier.key) && known.includes(key)) return;
  throw new UsageError(
    `the journal ${journalPath} holds an upload to ${target} under another API key (${earlier.key}), not this one (${key}); workspaces may share a URL, ` +
      "and resuming would leave out the rows that run settled, which went to that key's workspace, so nothing was sent: " +
      `if this key is of another workspace, give this upload its own --journal; if it is of the same workspace (a new key), give --restart to send every row again${statePath !== undefined && known?.includes(earlier.key) === true ? sameWorkspace(statePath, target) : ''}`,
  );
}

/** How a run resumes under a new key of the journal's workspace, when its state learned the target through that run's key: the state records this one too. */
const sameWorkspace = (statePath: string, target: string): string => `, or record it in the state that run learned into with \`${addKeyCommand(statePath, target)}\` and resume`;

/** Said by a run that resumed a journal of an earlier version, which named no API key: the journal now keeps this run's (openJournal). */
export const keylessJournalNote = (journalPath: string, key: string): string =>
  `the journal ${journalPath} was written by an earlier version of track, which kept no API key: this run resumed it and tied it to this run's key (${key}); ` +
  "if the run it holds was under another workspace's key, this run left out the rows that run settled: send them with its own --journal";
