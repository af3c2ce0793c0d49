// Objects in storage as inputs: an s3:// input expanded into the objects it names (in key order),
// an http(s):// URL checked, each object's identity (URL, ETag, size) taken once, and its bytes read
// as that identity (a changed object is refused, not mixed). A read the network breaks is taken up
// again from the byte it stopped at, after a backoff; when the tries run out it is a SourceError.
// The clients (s3.ts, http-object.ts) are loaded only when an input needs them.
import { InputError, SourceError, StoppedError } from '../errors.js';
import { backoffDelay } from '../transport/backoff.js';
import { sleep, systemClock } from '../transport/clock.js';
import { locate, withoutSignature } from './location.js';

/** How objects in storage are reached; plain values, as they cross to the planning thread. */
export interface RemoteSettings {
  /** --s3-endpoint (or AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL): an S3-compatible store, addressed path-style. */
  s3Endpoint?: string;
  /** Tries after the first when the network breaks a read (default 4), and the first backoff's ceiling in ms (default 500). */
  retries?: number;
  retryBaseMs?: number;
  /** How long a listing or a read may wait for its next bytes before it is taken for broken, in ms (default 30 s). */
  idleMs?: number;
  /** The run's stop (Ctrl-C, SIGTERM): a listing or a read under way ends with it, not after its tries (StoppedError). In this thread only. */
  stop?: AbortSignal;
}

/** One object as a run knows it: what its rows are recorded under, and what tells a changed one. */
export interface RemoteObject {
  /** What the run names it by (an http(s):// URL without the parameters that sign it). */
  url: string;
  /** The URL it is read from, when that is not `url` (a presigned URL). */
  href?: string;
  size: number;
  /** The ETag (or, from a web server that sends none, its Last-Modified); empty when it sends neither. */
  etag: string;
}

/** The objects a run reads, by URL, and how to reach them. */
export interface RemoteInputs {
  settings: RemoteSettings;
  objects: Readonly<Record<string, RemoteObject>>;
}

/** What a store does for a reader: list what an input names, and open an object's bytes from an offset. */
export interface ObjectStore {
  /** `watch` aborts a request that waits too long for its answer; `run()` starts its time anew (each page of a listing). */
  list(input: string, watch: IdleWatch): Promise<RemoteObject[]>;
  /** The bytes from `start` up to `end` (exclusive; the object's end when undefined), of the object as identified; `stop` cuts the read off. */
  open(object: RemoteObject, start: number, end?: number, stop?: AbortSignal): Promise<AsyncIterable<Uint8Array>>;
  close(): void;
}

/**
 * The error for an answer that is not of the object as listed, or undefined: a store that does not
 * keep to If-Match sends the object as it is now, and its ETag or size tells it apart. `size` is the
 * whole object's (a 206's Content-Range total, a 200's Content-Length).
 */
export function changedAnswer(object: RemoteObject, etag: string | undefined, size: number | undefined): InputError | undefined {
  // quoted or not, as stores differ between their listings and their answers
  const bare = (tag: string): string => tag.replace(/^W\//, '').replace(/^"(.*)"$/, '$1');
  const otherEtag = object.etag !== '' && etag !== undefined && bare(etag) !== bare(object.etag);
  const otherSize = size !== undefined && size !== object.size;
  if (!otherEtag && !otherSize) return undefined;
  return new InputError('changed while this run read it (its ETag or size is no longer the one listed); run again to read it anew', object.url);
}

/** The object's size in an answer: the total of a 206's Content-Range (`bytes 0-9/1234`), else a 200's length. */
export function totalSize(contentRange: string | undefined, contentLength: number | undefined, ranged: boolean): number | undefined {
  if (contentRange !== undefined) {
    const total = /\/(\d+)$/.exec(contentRange)?.[1];
    return total === undefined ? undefined : Number(total);
  }
  return ranged ? undefined : contentLength;
}

const DEFAULT_RETRIES = 4;
const DEFAULT_RETRY_BASE_MS = 500;
const DEFAULT_IDLE_MS = 30_000;

/**
 * A signal that aborts when `ms` pass with the watch running and no `run()` (nor `hold()`), or when
 * `stop` aborts: a server that stops answering without closing the connection would hold a read
 * forever. `silent()` says the time ran out.
 */
export interface IdleWatch {
  signal: AbortSignal;
  /** Starts the time anew (bytes came; a new request goes). */
  run(): void;
  /** Stops the time while the reader holds what came (or the watch is done). */
  hold(): void;
  silent(): boolean;
}

function idleWatch(ms: number, ...stops: Array<AbortSignal | undefined>): IdleWatch {
  const own = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const hold = (): void => clearTimeout(timer);
  const run = (): void => {
    hold();
    timer = setTimeout(() => own.abort(), ms);
  };
  run();
  const given = stops.filter((stop): stop is AbortSignal => stop !== undefined);
  return { signal: given.length === 0 ? own.signal : AbortSignal.any([...given, own.signal]), run, hold, silent: () => own.signal.aborted };
}

/** The inputs as they cross to another thread: without the run's stop, which does not cross (that thread is ended on a stop). */
export const acrossThreads = (remote: RemoteInputs | undefined): RemoteInputs | undefined =>
  remote === undefined ? undefined : { ...remote, settings: { ...remote.settings, stop: undefined } };

/** Whether the run's stop came (a function: the signal changes under the awaits). */
const halted = (settings: RemoteSettings): boolean => settings.stop?.aborted === true;

/** The error a listing or a read the run's stop cut off ends in. */
const stoppedWhile = (url: string, what: string): StoppedError => new StoppedError(`${url}: stopped while ${what}`);

/**
 * Runs `attempt` under an idle watch of the settings' length: an attempt whose time ran out fails
 * with that as its cause, not the abort it ended in.
 */
async function watched<T>(settings: RemoteSettings, attempt: (watch: IdleWatch) => Promise<T>): Promise<T> {
  const ms = settings.idleMs ?? DEFAULT_IDLE_MS;
  const watch = idleWatch(ms, settings.stop);
  try {
    return await attempt(watch);
  } catch (error) {
    throw watch.silent() ? Object.assign(new Error(`no answer for ${ms / 1000} s`), { code: 'ETIMEDOUT' }) : error;
  } finally {
    watch.hold();
  }
}

const stores = new Map<string, Promise<ObjectStore>>();

/** The store that serves an input (one per kind and endpoint, made when first needed). */
function storeFor(input: string, settings: RemoteSettings): Promise<ObjectStore> {
  const kind = locate(input).kind;
  const key = kind === 's3' ? `s3 ${settings.s3Endpoint ?? ''}` : 'http';
  let store = stores.get(key);
  if (store === undefined) {
    store = kind === 's3' ? import('./s3.js').then((m) => m.s3Store(settings)) : import('./http-object.js').then((m) => m.httpStore());
    stores.set(key, store);
  }
  return store;
}

/** Closes the clients this thread made; a later input makes them anew. */
export async function closeRemoteStores(): Promise<void> {
  const open = [...stores.values()];
  stores.clear();
  for (const store of open) (await store.catch(() => undefined))?.close();
}

/**
 * The objects an input names, in key order, each with its identity: one object, every object under
 * a prefix, or those a glob matches. Anything that makes the input unreadable (no such bucket or
 * object, nothing matched, no credentials, access denied) is an InputError naming it.
 */
export async function listRemote(input: string, settings: RemoteSettings): Promise<RemoteObject[]> {
  const store = await storeFor(input, settings);
  return retrying(withoutSignature(input), settings, 'listing it', () => watched(settings, (watch) => store.list(input, watch)));
}

function objectOf(url: string, remote: RemoteInputs | undefined): { object: RemoteObject; settings: RemoteSettings } {
  const object = remote?.objects[url];
  if (object === undefined || remote === undefined) throw new Error(`unreachable: ${url} was not listed before it was read`);
  return { object, settings: remote.settings };
}

/** Runs `attempt` again after a backoff while it fails for a cause other than the input (InputError). */
async function retrying<T>(url: string, settings: RemoteSettings, what: string, attempt: (failures: number) => Promise<T>): Promise<T> {
  const retries = settings.retries ?? DEFAULT_RETRIES;
  for (let failures = 0; ; failures += 1) {
    try {
      return await attempt(failures);
    } catch (error) {
      if (halted(settings)) throw stoppedWhile(url, what);
      if (error instanceof InputError || error instanceof SourceError) throw error;
      if (failures >= retries) throw new SourceError(`${what}: ${failures + 1} tries failed, the last with ${causeOf(error)}`, url);
      await pause(retryDelay(failures + 1, settings), settings.stop);
      if (halted(settings)) throw stoppedWhile(url, what);
    }
  }
}

/** Waits `ms`, or until `stop` aborts. */
const pause = (ms: number, stop?: AbortSignal): Promise<void> => sleep(systemClock, ms, stop).catch(() => undefined);

/** Between half and all of the backoff's ceiling for the nth failure in a row: never at once, never all together. */
const retryDelay = (failure: number, settings: RemoteSettings): number =>
  backoffDelay(failure, { baseMs: settings.retryBaseMs ?? DEFAULT_RETRY_BASE_MS, capMs: 30_000 }, () => 0.5 + Math.random() / 2);

/** A network error as a person reads it: its code and message. */
export function causeOf(error: unknown): string {
  const e = error as { code?: string; name?: string; message?: string; cause?: unknown };
  const inner = e.cause as { code?: string; message?: string } | undefined;
  const code = e.code ?? inner?.code;
  const message = e.message !== undefined && e.message !== '' ? e.message : inner?.message ?? String(error);
  return code !== undefined && !message.includes(code) ? `${code} (${message})` : message;
}

/**
 * The bytes of a listed object from its start, taken up again where the network broke them off.
 * `stop` is the reader's end: a read it cuts off is not tried again.
 */
export async function* remoteBytes(url: string, remote: RemoteInputs | undefined, stop?: AbortSignal): AsyncGenerator<Buffer> {
  const { object, settings } = objectOf(url, remote);
  const store = await storeFor(url, settings);
  /** The reader is gone: a read it cut off is not tried again (a function: the signal changes under the awaits). */
  const stopped = (): boolean => stop?.aborted === true;
  let offset = 0;
  /** Failures since bytes last came. */
  let failures = 0;
  const ms = settings.idleMs ?? DEFAULT_IDLE_MS;
  const reading = (): string => `reading it at byte ${offset} of ${object.size}`;
  while (offset < object.size) {
    const watch = idleWatch(ms, stop, settings.stop);
    try {
      for await (const chunk of await store.open(object, offset, undefined, watch.signal)) {
        offset += chunk.length;
        failures = 0;
        // the reader may hold the bytes a while (a slow delivery): no time runs meanwhile
        watch.hold();
        yield Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length);
        watch.run();
      }
      if (offset < object.size) throw new Error(`the connection ended at byte ${offset} of ${object.size}`);
    } catch (thrown) {
      if (stopped()) return;
      if (halted(settings)) throw stoppedWhile(url, reading());
      const error = watch.silent() ? Object.assign(new Error(`no byte came for ${ms / 1000} s`), { code: 'ETIMEDOUT' }) : thrown;
      if (error instanceof InputError || error instanceof SourceError) throw error;
      failures += 1;
      if (failures > (settings.retries ?? DEFAULT_RETRIES)) {
        throw new SourceError(`reading stopped at byte ${offset} of ${object.size}; ${failures} tries failed, the last with ${causeOf(error)}`, url);
      }
      await pause(retryDelay(failures, settings), settings.stop);
      if (stopped()) return;
      if (halted(settings)) throw stoppedWhile(url, reading());
    } finally {
      watch.hold();
    }
  }
}

/** The bytes of a listed object from `start` to `end` (exclusive), read whole, tried again as remoteBytes does. */
export async function remoteRange(url: string, remote: RemoteInputs | undefined, start: number, end: number): Promise<Uint8Array> {
  const { object, settings } = objectOf(url, remote);
  const store = await storeFor(url, settings);
  return retrying(url, settings, `reading bytes ${start}-${end - 1}`, () =>
    watched(settings, async (watch) => {
      const out = new Uint8Array(end - start);
      let at = 0;
      for await (const chunk of await store.open(object, start, end, watch.signal)) {
        watch.run();
        out.set(chunk.subarray(0, out.length - at), at);
        at += chunk.length;
      }
      if (at < out.length) throw new Error(`the connection ended after ${at} of ${out.length} bytes`);
      return out;
    }),
  );
}
