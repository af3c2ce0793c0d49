// The request log: the last N requests an app sent and what each was answered, kept in memory so a
// test can ask the emulator what came (GET /_track/requests) and a person can look (the web view).
import { ARRAY_NAMES, normalizeEmail, normalizePhone, type ArrayName, type MinorError } from '../model/index.js';
import { DEFAULT_REQUEST_LOG_SIZE } from './defaults.js';
import type { EmulatorRequest, EmulatorResponse } from './handler.js';
import { routePath } from './route-path.js';
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
  /** The body as JSON when it parses and was kept whole, else its text (cut at 64 KB); an `api_key` field reads "[redacted]". */
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
  response: EmulatorResponse;
  /** The body as received (at most LOGGED_BODY_BYTES of it), parsed only when read. */
  body: Buffer | undefined;
  bodyBytes: number;
  truncated: boolean;
  omitted?: string;
  /** Whom the request's items name (see namedUsers), from the whole parsed body when it was logged. */
  names: ReadonlySet<string>;
}

export interface RequestLogQuery {
  limit?: number;
  /** `201`, a class such as `4xx`, or `dropped` (any case). */
  status?: string;
  /** A route, as the server routes it (`/users/track/` is `/users/track`). */
  path?: string;
  /** The requests with an item (of attributes, events or purchases) naming this user by its external_id, */
  externalId?: string;
  /** ... its email (any case), */
  email?: string;
  /** ... its phone, */
  phone?: string;
  /** ... or its user alias. */
  alias?: { alias_name: string; alias_label: string };
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

/** A phone already in E.164, which needs no parsing: most are. */
const E164 = /^\+[1-9][0-9]{1,14}$/;

const userName = {
  externalId: (id: string): string => `e\u0000${id}`,
  email: (email: string): string => `m\u0000${normalizeEmail(email)}`,
  // a phone as the emulator matches it (E.164), however it was written: `4155552671` names `+14155552671`
  phone: (phone: string): string => `p\u0000${E164.test(phone) ? phone : (normalizePhone(phone) ?? phone)}`,
  alias: (name: string, label: string): string => `a\u0000${name}\u0000${label}`,
};
const NO_NAMES: ReadonlySet<string> = new Set();

/** Whom the items of a body name, at the top level of each item: external_id, email, phone, user_alias. */
function namedUsers(body: unknown): ReadonlySet<string> {
  if (typeof body !== 'object' || body === null) return NO_NAMES;
  const names = new Set<string>();
  for (const name of ARRAY_NAMES) {
    const items = (body as Record<string, unknown>)[name];
    if (!Array.isArray(items)) continue;
    for (const item of items) {
      if (typeof item !== 'object' || item === null) continue;
      const { external_id: id, email, phone, user_alias: alias } = item as Record<string, unknown>;
      if (typeof id === 'string') names.add(userName.externalId(id));
      if (typeof email === 'string') names.add(userName.email(email));
      if (typeof phone === 'string') names.add(userName.phone(phone));
      const { alias_name: aliasName, alias_label: aliasLabel } = (alias ?? {}) as Record<string, unknown>;
      if (typeof aliasName === 'string' && typeof aliasLabel === 'string') names.add(userName.alias(aliasName, aliasLabel));
    }
  }
  return names.size === 0 ? NO_NAMES : names;
}

/** The user names a query asks for; every one must be named by the request. */
function wantedNames(query: RequestLogQuery): string[] {
  const wanted: string[] = [];
  if (query.externalId !== undefined) wanted.push(userName.externalId(query.externalId));
  if (query.email !== undefined) wanted.push(userName.email(query.email));
  if (query.phone !== undefined) wanted.push(userName.phone(query.phone));
  if (query.alias !== undefined) wanted.push(userName.alias(query.alias.alias_name, query.alias.alias_label));
  return wanted;
}

const REDACTED = '[redacted]';
const API_KEY_TEXT = Buffer.from('"api_key"');

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
  let end = LOGGED_BODY_BYTES;
  // a byte 10xxxxxx continues a UTF-8 character: cut before the character it belongs to
  while (end > LOGGED_BODY_BYTES - 4 && (body[end] & 0xc0) === 0x80) end -= 1;
  // a copy, so the log does not keep the whole buffer alive
  return Buffer.from(body.subarray(0, end));
}

/** The user filters of a query string (external_id, email, phone, alias=NAME:LABEL); a message for a bad one. */
export function userFilters(params: URLSearchParams): Pick<RequestLogQuery, 'externalId' | 'email' | 'phone' | 'alias'> | string {
  const given = (name: string): string | undefined => params.get(name) || undefined;
  const alias = given('alias');
  const at = alias === undefined ? -1 : alias.lastIndexOf(':');
  if (alias !== undefined && at <= 0) return `alias: expected NAME:LABEL, got "${alias}"`;
  return {
    externalId: given('external_id'),
    email: given('email'),
    phone: given('phone'),
    alias: alias === undefined ? undefined : { alias_name: alias.slice(0, at), alias_label: alias.slice(at + 1) },
  };
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

  /** Records a request and its answer; `parsed` is its body as the handler parsed it (undefined when it did not). */
  record(request: EmulatorRequest, response: EmulatorResponse, parsed?: unknown): void {
    if (this.size === 0) return;
    const body = request.bodyTooLarge ? undefined : loggedBody(request.body, parsed);
    const entry: Entry = {
      id: (this.lastId += 1),
      // when the answer was decided: an injected --latency delay comes after it
      time: new Date().toISOString(),
      method: request.method,
      path: request.path,
      response,
      body,
      bodyBytes: request.bodyBytes ?? request.body.length,
      truncated: body !== undefined && request.body.length > LOGGED_BODY_BYTES,
      omitted: request.bodyTooLarge ? 'over the size limit, not read' : undefined,
      names: namedUsers(parsed),
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
    const path = query.path === undefined ? undefined : routePath(query.path);
    const wanted = wantedNames(query);
    const out: LoggedRequest[] = [];
    for (const entry of this.newestFirst()) {
      if (out.length >= limit) break;
      if (path !== undefined && entry.path !== path) continue;
      const status = entry.response.drop === undefined ? entry.response.status : null;
      if (query.status !== undefined && !statusMatches(status, query.status)) continue;
      if (!wanted.every((name) => entry.names.has(name))) continue;
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
