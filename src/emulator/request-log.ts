// The request log: the last N requests an app sent and what each was answered, kept in memory so a
// test can ask the emulator what came (GET /_track/requests) and a person can look (the web view).
// Its memory is bounded whatever the requests hold: every part an entry keeps is cut to a size of
// its own and counted (entryBytes()), and all entries together stay within LOG_BYTES.
import { ARRAY_NAMES, type ArrayName, type MinorError } from '../model/index.js';
import { DEFAULT_REQUEST_LOG_SIZE } from './defaults.js';
import type { EmulatorRequest, EmulatorResponse } from './handler.js';
import { keptText, namedUsers, wantedNames, type UserFilters } from './request-log-users.js';
import { routePath } from './route-path.js';

export { userFilters } from './request-log-users.js';
/** A body longer than this is kept cut, as text, with its size. */
export const LOGGED_BODY_BYTES = 64 * 1024;
/** A path longer than this is kept cut, as the body is. */
export const LOGGED_PATH_BYTES = 2 * 1024;
/** The answer's message and each minor error are kept to this many characters. */
const LOGGED_TEXT_CHARS = 1024;
/** The minor errors an entry keeps: the first this many. */
const LOGGED_ERRORS = 1000;
/** All entries together, as entryBytes() counts them: past this, the oldest lose their bodies, then themselves. */
export const LOG_BYTES = 128 * 1024 * 1024;

/** One logged request as GET /_track/requests answers it. */
export interface LoggedRequest {
  id: number;
  time: string;
  method: string;
  path: string;
  /** The path was longer than LOGGED_PATH_BYTES: `path` is its start. */
  path_truncated?: true;
  /** null when the connection was closed unanswered (an injected drop). */
  status: number | null;
  dropped?: 'before-apply' | 'after-commit';
  message?: string;
  /** `*_processed` of the answer, for each array it counted. */
  processed: Partial<Record<ArrayName, number>>;
  /** The items refused while the rest were applied (a 201), or each for its own reason (a 400 naming items). */
  errors: MinorError[];
  /** The body as JSON when it parses, was kept whole and nests at most 1,000 deep, else its text (cut at 64 KB); an `api_key` field reads "[redacted]". */
  body: unknown;
  /** The body's size as received (over --max-body: the bytes read before it was refused). */
  body_bytes: number;
  body_truncated?: true;
  /** Why the body is not here (never read: too large; or dropped to bound the log's memory). */
  body_omitted?: string;
}

interface Entry {
  id: number;
  time: string;
  method: string;
  path: string;
  pathTruncated: boolean;
  status: number | null;
  dropped?: 'before-apply' | 'after-commit';
  answer: Pick<LoggedRequest, 'message' | 'processed' | 'errors'>;
  /** The body as received (at most LOGGED_BODY_BYTES of it), parsed only when read. */
  body: Buffer | undefined;
  bodyBytes: number;
  truncated: boolean;
  omitted?: string;
  /** Whom the request's items name (see namedUsers), from the whole parsed body when it was logged. */
  names: ReadonlySet<string>;
  /** What the entry holds besides its body, as entryBytes() counts it. */
  bytes: number;
}

export interface RequestLogQuery extends UserFilters {
  limit?: number;
  /** `201`, a class such as `4xx`, or `dropped` (any case). */
  status?: string;
  /** A route, as the server routes it (`/users/track/` is `/users/track`). */
  path?: string;
}

/** Deeper than this, a body is given as its text: JSON.stringify, writing the answer, would run out of stack. */
export const LOGGED_BODY_DEPTH = 1000;

/** The value holds arrays or objects nested more than `max` deep. */
function nestsDeeper(value: unknown, max: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (max === 0) return true;
  for (const inner of Array.isArray(value) ? value : Object.values(value)) if (nestsDeeper(inner, max - 1)) return true;
  return false;
}

function parseBody(entry: Entry): unknown {
  if (entry.body === undefined) return null;
  const text = entry.body.toString('utf8');
  if (entry.truncated) return text;
  try {
    const body: unknown = JSON.parse(text);
    return nestsDeeper(body, LOGGED_BODY_DEPTH) ? text : body;
  } catch {
    return text;
  }
}

const REDACTED = '[redacted]';
const API_KEY_TEXT = Buffer.from('"api_key"');

/** The first `max` bytes of UTF-8 text or less, cut before a character (never inside one), as a copy of their own. */
function cutUtf8(bytes: Buffer, max: number): Buffer {
  let end = max;
  // a byte 10xxxxxx continues a UTF-8 character: cut before the character it belongs to
  while (end > max - 4 && (bytes[end] & 0xc0) === 0x80) end -= 1;
  // a copy, so the log does not keep the whole buffer alive
  return Buffer.from(bytes.subarray(0, end));
}

/**
 * The body as the log keeps it: an `api_key` field (the legacy way of passing the key) redacted, and
 * the whole cut to LOGGED_BODY_BYTES at a character boundary.
 */
function loggedBody(raw: Buffer, parsed: unknown): Buffer {
  let body = raw;
  if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) && Object.hasOwn(parsed, 'api_key')) {
    body = Buffer.from(JSON.stringify({ ...parsed, api_key: REDACTED }));
  } else if (raw.includes(API_KEY_TEXT)) {
    // not JSON, or the field is not at the top: redact it in the text (a cut value's end is dropped too)
    const text = raw.subarray(0, LOGGED_BODY_BYTES + 4).toString('utf8').replace(/("api_key"\s*:\s*)"(?:[^"\\]|\\.)*("|$)/g, `$1"${REDACTED}"`);
    body = Buffer.from(text);
  }
  if (body.length <= LOGGED_BODY_BYTES) return body === raw ? raw : body;
  return cutUtf8(body, LOGGED_BODY_BYTES);
}

/** The path as the log keeps it, and whether it was cut (at LOGGED_PATH_BYTES, before a character). */
function keptPath(path: string): { path: string; cut: boolean } {
  // at most 3 bytes a character (4 for 2, a surrogate pair): no need to count them
  if (path.length * 3 <= LOGGED_PATH_BYTES) return { path: keptText(path, path.length), cut: false };
  const bytes = Buffer.from(path, 'utf8');
  if (bytes.length <= LOGGED_PATH_BYTES) return { path: bytes.toString('utf8'), cut: false };
  return { path: cutUtf8(bytes, LOGGED_PATH_BYTES).toString('utf8'), cut: true };
}

/** The bytes an entry holds besides its body, counted generously: two a character, and each object's own. */
function entryBytes(entry: Entry): number {
  const OBJECT = 64;
  let bytes = 8 * OBJECT + 2 * (entry.time.length + entry.method.length + entry.path.length + (entry.answer.message?.length ?? 0));
  for (const error of entry.answer.errors) bytes += OBJECT + 2 * error.type.length;
  // a name in a set: the string's header and characters, and the set's slot
  for (const name of entry.names) bytes += 40 + 2 * name.length;
  return bytes;
}

function statusMatches(status: number | null, wanted: string): boolean {
  const text = status === null ? 'dropped' : String(status);
  return /^[1-5]xx$/i.test(wanted) ? text[0] === wanted[0] && text.length === 3 : text === wanted.toLowerCase();
}

/** What the answer said, as the log keeps it: its message, counts and minor errors. */
export function answerOf(response: EmulatorResponse): Pick<LoggedRequest, 'message' | 'processed' | 'errors'> {
  const body = response.body as { message?: unknown; errors?: unknown } | undefined;
  const processed: Partial<Record<ArrayName, number>> = {};
  let counted = false;
  if (typeof body === 'object' && body !== null) {
    for (const name of ARRAY_NAMES) {
      const n = (body as Record<string, unknown>)[`${name}_processed`];
      if (typeof n === 'number') {
        processed[name] = n;
        counted = true;
      }
    }
  }
  // a fatal answer's errors repeat its message; only an answer that counted items names minor errors
  const errors = counted && Array.isArray(body?.errors) ? (body.errors as MinorError[]) : [];
  return {
    message: typeof body?.message === 'string' ? keptText(body.message, LOGGED_TEXT_CHARS) : undefined,
    processed,
    errors: errors.slice(0, LOGGED_ERRORS).map((e) => ({ type: keptText(e.type, LOGGED_TEXT_CHARS), input_array: e.input_array, index: e.index })),
  };
}

/** A bounded ring of the last `size` requests (0 keeps none), within LOG_BYTES in all. */
export class RequestLog {
  private entries: (Entry | undefined)[];
  private next = 0;
  private count = 0;
  private lastId = 0;
  /** What the entries hold, as entryBytes() counts it, their bodies included. */
  private heldBytes = 0;
  /** The oldest entry that may still hold a body, as an id. */
  private oldestWithBody = 1;

  constructor(readonly size: number = DEFAULT_REQUEST_LOG_SIZE) {
    this.entries = new Array<Entry | undefined>(size);
  }

  get length(): number {
    return this.count;
  }

  /** What the log holds, in bytes as it counts them (at most LOG_BYTES). */
  get bytes(): number {
    return this.heldBytes;
  }

  /** Records a request and its answer; `parsed` is its body as the handler parsed it (undefined when it did not). */
  record(request: EmulatorRequest, response: EmulatorResponse, parsed?: unknown): void {
    if (this.size === 0) return;
    const body = request.bodyTooLarge ? undefined : loggedBody(request.body, parsed);
    const path = keptPath(request.path);
    const entry: Entry = {
      id: (this.lastId += 1),
      // when the answer was decided: an injected --latency delay comes after it
      time: new Date().toISOString(),
      method: keptText(request.method, 32),
      path: path.path,
      pathTruncated: path.cut,
      status: response.drop === undefined ? response.status : null,
      dropped: response.drop,
      answer: response.drop === undefined ? answerOf(response) : { processed: {}, errors: [] },
      body,
      bodyBytes: request.bodyBytes ?? request.body.length,
      truncated: body !== undefined && request.body.length > LOGGED_BODY_BYTES,
      omitted: request.bodyTooLarge ? 'over the size limit, not read' : undefined,
      names: namedUsers(parsed),
      bytes: 0,
    };
    entry.bytes = entryBytes(entry);
    const old = this.entries[this.next];
    if (old !== undefined) this.heldBytes -= old.bytes + (old.body?.length ?? 0);
    this.entries[this.next] = entry;
    this.next = (this.next + 1) % this.size;
    this.count = Math.min(this.count + 1, this.size);
    this.heldBytes += entry.bytes + (body?.length ?? 0);
    if (this.heldBytes > LOG_BYTES) this.makeRoom();
  }

  /** Down to half of LOG_BYTES: the oldest bodies go first, then, when that is not enough, the oldest entries. */
  private makeRoom(): void {
    for (const entry of this.oldestFirst()) {
      if (this.heldBytes <= LOG_BYTES / 2) return;
      if (entry.id < this.oldestWithBody || entry.body === undefined) continue;
      this.heldBytes -= entry.body.length;
      entry.body = undefined;
      entry.omitted = `dropped to keep the log within ${LOG_BYTES / 1024 / 1024} MiB`;
      this.oldestWithBody = entry.id + 1;
    }
    while (this.heldBytes > LOG_BYTES / 2 && this.count > 1) {
      const at = (this.next - this.count + this.size) % this.size;
      this.heldBytes -= this.entries[at]?.bytes ?? 0;
      this.entries[at] = undefined;
      this.count -= 1;
    }
  }

  private *oldestFirst(): Generator<Entry> {
    for (let i = 0; i < this.count; i += 1) {
      const entry = this.entries[(this.next - this.count + i + this.size) % this.size];
      if (entry !== undefined) yield entry;
    }
  }

  private *newestFirst(): Generator<Entry> {
    for (let i = 1; i <= this.count; i += 1) {
      const entry = this.entries[(this.next - i + this.size) % this.size];
      if (entry !== undefined) yield entry;
    }
  }

  /** Empties the log; returns how many entries it held. */
  clear(): number {
    const had = this.count;
    this.entries = new Array<Entry | undefined>(this.size);
    this.next = 0;
    this.count = 0;
    this.heldBytes = 0;
    return had;
  }

  /** The matching requests, newest first. */
  query(query: RequestLogQuery = {}): LoggedRequest[] {
    return [...this.select(query)];
  }

  /**
   * The same, each made (its body parsed) only as it is asked for: the entries are chosen now, so
   * requests logged meanwhile change nothing, and no more than one is held made at a time.
   */
  *select(query: RequestLogQuery = {}): Generator<LoggedRequest> {
    const limit = query.limit ?? 100;
    const path = query.path === undefined ? undefined : routePath(query.path);
    const wanted = wantedNames(query);
    const chosen: Entry[] = [];
    for (const entry of this.newestFirst()) {
      if (chosen.length >= limit) break;
      if (path !== undefined && entry.path !== path) continue;
      if (query.status !== undefined && !statusMatches(entry.status, query.status)) continue;
      if (!wanted.every((name) => entry.names.has(name))) continue;
      chosen.push(entry);
    }
    for (const entry of chosen) yield view(entry);
  }
}

function view(entry: Entry): LoggedRequest {
  return {
    id: entry.id,
    time: entry.time,
    method: entry.method,
    path: entry.path,
    ...(entry.pathTruncated ? { path_truncated: true as const } : {}),
    status: entry.status,
    ...(entry.dropped === undefined ? {} : { dropped: entry.dropped }),
    ...entry.answer,
    body: parseBody(entry),
    body_bytes: entry.bodyBytes,
    ...(entry.truncated ? { body_truncated: true as const } : {}),
    ...(entry.omitted === undefined ? {} : { body_omitted: entry.omitted }),
  };
}
