// The request log: the last N requests an app sent and what each was answered, kept in memory so a
// test can ask the emulator what came (GET /_track/requests) and a person can look (the web view).
import { ARRAY_NAMES, type ArrayName, type MinorError } from '../model/index.js';
import { DEFAULT_REQUEST_LOG_SIZE } from './defaults.js';
import type { EmulatorRequest, EmulatorResponse } from './handler.js';
/** A body longer than this is kept cut, as text, with its size. */
export const LOGGED_BODY_BYTES = 64 * 1024;
/** The bodies of all entries together: past this, the oldest entries lose their bodies. */
const LOGGED_BODIES_TOTAL = 64 * 1024 * 1024;

/** One logged request as GET /_track/requests answers it. */
export interface LoggedRequest {
  id: number;
  time: string;
  method: string;
  path: string;
  /** null when the connection was closed unanswered (an injected drop). */
  status: number | null;
  dropped?: 'before-apply' | 'after-commit';
  message?: string;
  /** `*_processed` of the answer, for each array it counted. */
  processed: Partial<Record<ArrayName, number>>;
  /** The items refused while the rest were applied (a 201), or each for its own reason (a 400 naming items). */
  errors: MinorError[];
  /** The body as JSON when it parses and was kept whole, else its text (cut at 64 KB). */
  body: unknown;
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
  response: EmulatorResponse;
  /** The body as received (at most LOGGED_BODY_BYTES of it), parsed only when read. */
  body: Buffer | undefined;
  bodyBytes: number;
  truncated: boolean;
  omitted?: string;
  /** The external_ids the body names, worked out when first filtered on. */
  externalIds?: ReadonlySet<string>;
}

export interface RequestLogQuery {
  limit?: number;
  /** `201`, or a class such as `4xx`. */
  status?: string;
  path?: string;
  externalId?: string;
}

function parseBody(entry: Entry): unknown {
  if (entry.body === undefined) return null;
  const text = entry.body.toString('utf8');
  if (entry.truncated) return text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The external_ids an item of the body names, at the top level of each item. */
function namedExternalIds(body: unknown): Set<string> {
  const ids = new Set<string>();
  if (typeof body !== 'object' || body === null) return ids;
  for (const name of ARRAY_NAMES) {
    const items = (body as Record<string, unknown>)[name];
    if (!Array.isArray(items)) continue;
    for (const item of items) {
      const id = (item as { external_id?: unknown } | null)?.external_id;
      if (typeof id === 'string') ids.add(id);
    }
  }
  return ids;
}

function statusMatches(status: number | null, wanted: string): boolean {
  const text = status === null ? 'dropped' : String(status);
  return /^[1-5]xx$/i.test(wanted) ? text[0] === wanted[0] && text.length === 3 : text === wanted;
}

/** What the answer said, as the log keeps it: its message, counts and minor errors. */
function answerOf(response: EmulatorResponse): Pick<LoggedRequest, 'message' | 'processed' | 'errors'> {
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
  return { message: typeof body?.message === 'string' ? body.message : undefined, processed, errors };
}

/** A bounded ring of the last `size` requests (0 keeps none). */
export class RequestLog {
  private entries: (Entry | undefined)[];
  private next = 0;
  private count = 0;
  private lastId = 0;
  private bodyBytes = 0;
  /** The oldest entry that may still hold a body, as an id. */
  private oldestWithBody = 1;

  constructor(readonly size: number = DEFAULT_REQUEST_LOG_SIZE) {
    this.entries = new Array<Entry | undefined>(size);
  }

  get length(): number {
    return this.count;
  }

  record(request: EmulatorRequest, response: EmulatorResponse): void {
    if (this.size === 0) return;
    const whole = request.body.length <= LOGGED_BODY_BYTES;
    // a body cut from a larger buffer is copied, so the log does not keep the whole one alive
    const body = whole ? request.body : Buffer.from(request.body.subarray(0, LOGGED_BODY_BYTES));
    const entry: Entry = {
      id: (this.lastId += 1),
      time: new Date().toISOString(),
      method: request.method,
      path: request.path,
      response,
      body: request.bodyTooLarge ? undefined : body,
      bodyBytes: request.bodyTooLarge ? Number(request.headers['content-length'] ?? request.body.length) : request.body.length,
      truncated: !whole,
      omitted: request.bodyTooLarge ? 'over the size limit, not read' : undefined,
    };
    const old = this.entries[this.next];
    if (old?.body !== undefined) this.bodyBytes -= old.body.length;
    this.entries[this.next] = entry;
    this.next = (this.next + 1) % this.size;
    this.count = Math.min(this.count + 1, this.size);
    this.bodyBytes += entry.body?.length ?? 0;
    if (this.bodyBytes > LOGGED_BODIES_TOTAL) this.dropOldBodies();
  }

  private dropOldBodies(): void {
    for (const entry of this.oldestFirst()) {
      if (this.bodyBytes <= LOGGED_BODIES_TOTAL / 2) break;
      if (entry.id < this.oldestWithBody || entry.body === undefined) continue;
      this.bodyBytes -= entry.body.length;
      entry.body = undefined;
      entry.omitted = `dropped to keep the log's bodies within ${LOGGED_BODIES_TOTAL / 1024 / 1024} MiB`;
      this.oldestWithBody = entry.id + 1;
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
    this.bodyBytes = 0;
    return had;
  }

  /** The matching requests, newest first. */
  query(query: RequestLogQuery = {}): LoggedRequest[] {
    const limit = query.limit ?? 100;
    const out: LoggedRequest[] = [];
    for (const entry of this.newestFirst()) {
      if (out.length >= limit) break;
      if (query.path !== undefined && entry.path !== query.path) continue;
      const status = entry.response.drop === undefined ? entry.response.status : null;
      if (query.status !== undefined && !statusMatches(status, query.status)) continue;
      if (query.externalId !== undefined) {
        entry.externalIds ??= namedExternalIds(parseBody(entry));
        if (!entry.externalIds.has(query.externalId)) continue;
      }
      out.push(this.view(entry, status));
    }
    return out;
  }

  private view(entry: Entry, status: number | null): LoggedRequest {
    const answer = entry.response.drop === undefined ? answerOf(entry.response) : { processed: {}, errors: [] };
    return {
      id: entry.id,
      time: entry.time,
      method: entry.method,
      path: entry.path,
      status,
      ...(entry.response.drop === undefined ? {} : { dropped: entry.response.drop }),
      ...answer,
      body: parseBody(entry),
      body_bytes: entry.bodyBytes,
      ...(entry.truncated ? { body_truncated: true as const } : {}),
      ...(entry.omitted === undefined ? {} : { body_omitted: entry.omitted }),
    };
  }
}
