// The inputs as a run reads them: each s3:// prefix or glob replaced by the objects it names (in key
// order), every object in storage listed with its identity (URL, ETag, size), before anything is
// written or sent; a local file or standard input as given. An object or a local file named twice
// is refused: read twice, its rows would be sent twice (events recorded twice).
import { fstatSync, statSync, type BigIntStats } from 'node:fs';
import { UsageError } from '../errors.js';
import { STDIN } from '../input/source.js';
import { isRemote } from '../input/location.js';
import type { RemoteInputs, RemoteObject, RemoteSettings } from '../input/remote.js';

export interface ResolvedInputs {
  /** Local files, `-` and object URLs, in the order they are read. */
  inputs: string[];
  /** The objects among them; undefined when there are none. */
  remote?: RemoteInputs;
}

/** An input named twice, a file or an object: refused (a seed says so in its own words). */
export class NamedTwiceError extends UsageError {}

export async function resolveInputs(inputs: readonly string[], settings: RemoteSettings = {}): Promise<ResolvedInputs> {
  checkLocalFilesOnce(inputs);
  if (!inputs.some(isRemote)) return { inputs: [...inputs] };
  // loaded only for objects in storage
  const { closeRemoteStores, listRemote } = await import('../input/remote.js');
  const out: string[] = [];
  const objects: Record<string, RemoteObject> = {};
  /** Which input named each object first, for the message when two name one. */
  const namedBy = new Map<string, string>();
  try {
    for (const input of inputs) {
      if (!isRemote(input)) {
        out.push(input);
        continue;
      }
      for (const object of await listRemote(input, settings)) {
        const key = objectKey(object.url);
        const earlier = namedBy.get(key);
        if (earlier !== undefined) {
          const by = earlier === input ? `${input} twice` : `${earlier} and ${input}`;
          throw new NamedTwiceError(`${object.url} is named by ${by}; give each object once`);
        }
        namedBy.set(key, input);
        objects[object.url] = object;
        out.push(object.url);
      }
    }
  } finally {
    await closeRemoteStores();
  }
  return { inputs: out, remote: { settings, objects } };
}

/**
 * An object's URL as two spellings of it compare: as the URL standard writes it (scheme and host in
 * lower case, `./` and `../` resolved), with the characters that need no escape unescaped
 * (`%64.csv` is `d.csv`), without a fragment or an empty query. An object in S3 is named by its
 * key as listed (`%64` there is three characters of a key).
 */
function objectKey(url: string): string {
  if (!/^https?:/i.test(url)) return url;
  try {
    const parsed = new URL(url);
    parsed.hash = '';
    if (parsed.search === '') parsed.search = '';
    parsed.pathname = parsed.pathname.replace(/%([0-9A-Fa-f]{2})/g, (escaped, hex: string) => {
      const c = String.fromCharCode(Number.parseInt(hex, 16));
      return /[A-Za-z0-9\-._~]/.test(c) ? c : escaped.toUpperCase();
    });
    return parsed.href;
  } catch {
    return url;
  }
}

/**
 * Refuses a local file named twice: by one name twice, or by two (`users.csv` and `./users.csv`, a
 * link to it, standard input redirected from it), told by its device and inode. Only files are
 * compared: a name that is not one is left to the checks that say why.
 */
function checkLocalFilesOnce(inputs: readonly string[]): void {
  const namedBy = new Map<string, string>();
  let stdinSeen = false;
  for (const input of inputs) {
    // (standard input given twice is refused as what can be read only once, whatever it is)
    if (isRemote(input) || (input === STDIN && stdinSeen)) continue;
    if (input === STDIN) stdinSeen = true;
    let info: BigIntStats | undefined;
    try {
      info = input === STDIN ? fstatSync(0, { bigint: true }) : statSync(input, { throwIfNoEntry: false, bigint: true });
    } catch {
      // (no standard input, a name that cannot be looked up: said by the checks of every input)
    }
    if (info?.isFile() !== true) continue;
    const id = `${info.dev}:${info.ino}`;
    const name = input === STDIN ? 'standard input (-)' : input;
    const earlier = namedBy.get(id);
    if (earlier !== undefined) {
      throw new NamedTwiceError(earlier === name ? `${name} is given twice; give each file once` : `${earlier} and ${name} are the same file; give each file once`);
    }
    namedBy.set(id, name);
  }
}
