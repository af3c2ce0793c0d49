// The inputs as a run reads them: each s3:// prefix or glob replaced by the objects it names (in key
// order), every object in storage listed with its identity (URL, ETag, size), before anything is
// written or sent; a local file or standard input as given.
import { UsageError } from '../errors.js';
import { isRemote } from '../input/location.js';
import type { RemoteInputs, RemoteObject, RemoteSettings } from '../input/remote.js';

export interface ResolvedInputs {
  /** Local files, `-` and object URLs, in the order they are read. */
  inputs: string[];
  /** The objects among them; undefined when there are none. */
  remote?: RemoteInputs;
}

export async function resolveInputs(inputs: readonly string[], settings: RemoteSettings = {}): Promise<ResolvedInputs> {
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
        const earlier = namedBy.get(object.url);
        if (earlier !== undefined) {
          const by = earlier === input ? `${input} twice` : `${earlier} and ${input}`;
          throw new UsageError(`${object.url} is named by ${by}; give each object once`);
        }
        namedBy.set(object.url, input);
        objects[object.url] = object;
        out.push(object.url);
      }
    }
  } finally {
    await closeRemoteStores();
  }
  return { inputs: out, remote: { settings, objects } };
}
