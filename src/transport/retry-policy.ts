// What an attempt's result means for the request (decisions.md "Wire format"): done, wait and try
// again, try again after a backoff, an outcome that cannot be known, stop everything, or reject.
import type { SuccessResponse } from '../model/types.js';
import type { PostResult } from './http-client.js';
import { parseRetryAfter, rateLimitWaitMs, serverNow, type HeaderMap } from './rate-limit-headers.js';

export type Verdict =
  /** 2xx with the endpoint's success body: applied, except the items named by minor errors. */
  | { kind: 'accepted'; response: SuccessResponse }
  /**
   * 2xx with a body that is not the endpoint's (a web front end's page, no JSON, a body cut short):
   * nothing can be learned from it, and the request may or may not have reached the service.
   * `answer` describes it for a person: status, content type, the start of the body.
   */
  | { kind: 'not-endpoint'; status: number; answer: string }
  /** 429: wait (for waitMs when the server says), pausing all sending; not a failure. */
  | { kind: 'rate-limited'; waitMs: number | undefined }
  /** 5xx, 408, or the request never reached the server: safe to send again after a backoff. */
  | { kind: 'retry'; reason: string; minDelayMs?: number }
  /** Sent, then the connection broke with no answer: it may have been applied. */
  | { kind: 'unknown'; reason: string }
  /** The server will refuse every request (key, permission, URL): stop the run. */
  | { kind: 'fatal'; status?: number; message: string }
  /**
   * The server refused this request for what it holds: its items are rejected, not retried. `errors`
   * holds the minor error entries of a 400 that refused every item on its own (decisions.md "Wire
   * format"), to be joined back to each item as a 201's are.
   */
  | { kind: 'reject'; status: number; message: string; errors?: unknown[] }
  /** Our own signal ended the attempt. */
  | { kind: 'aborted'; sent: boolean };

/** The server's message from a fatal-shape body, else a short piece of the body as text. */
export function serverMessage(body: string): string | undefined {
  try {
    const parsed: unknown = JSON.parse(body);
    if (typeof parsed === 'object' && parsed !== null) {
      const { message, errors } = parsed as { message?: unknown; errors?: unknown };
      if (typeof message === 'string' && message !== '') return message;
      if (Array.isArray(errors) && typeof errors[0] === 'string') return errors[0];
    }
  } catch {
    // not JSON: fall through to the text
  }
  const text = body.trim().replace(/\s+/g, ' ');
  return text === '' ? undefined : text.length > 200 ? `${text.slice(0, 200)}...` : text;
}

/** The endpoint's success answer (spec 7): a JSON object whose `message` is "success". */
function parseSuccess(body: string): SuccessResponse | undefined {
  try {
    const parsed: unknown = JSON.parse(body);
    const isObject = typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed);
    return isObject && (parsed as { message?: unknown }).message === 'success' ? (parsed as SuccessResponse) : undefined;
  } catch {
    return undefined;
  }
}

const ANSWER_START = 80;

/** A 2xx that is not the endpoint's, for a person: `HTTP 200 (text/html): <html>...`. */
function describeAnswer(status: number, headers: HeaderMap, body: string): string {
  const type = headers['content-type'] ?? 'no content type';
  const text = body.trim().replace(/\s+/g, ' ');
  const start = text === '' ? 'an empty body' : JSON.stringify(text.length > ANSWER_START ? `${text.slice(0, ANSWER_START)}...` : text);
  return `HTTP ${status} (${type}): ${start}`;
}

/** A minor error entry: `{type, input_array, index}` (decisions.md "Wire format"). */
function isMinorEntry(entry: unknown): boolean {
  if (typeof entry !== 'object' || entry === null) return false;
  const { type, input_array, index } = entry as Record<string, unknown>;
  return typeof type === 'string' && typeof input_array === 'string' && typeof index === 'number';
}

/** The minor error entries of a refusal's body, when its `errors` are such entries (not the fatal shape). */
function minorEntries(body: string): unknown[] | undefined {
  try {
    const errors = (JSON.parse(body) as { errors?: unknown } | null)?.errors;
    return Array.isArray(errors) && errors.length > 0 && errors.some(isMinorEntry) ? errors : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Messages that say a request holds more items than the server takes in one: the emulator's ("request
 * has 75 items; at most 50 are allowed across ...") and the usual ways of saying so.
 */
const OVER_BATCH_LIMIT = [
  /\bat most \d+ are allowed (across|in one array)/i,
  /\b(too many|more than \d+|exceed\w*(?: the)? (?:maximum|max|limit)\w*(?: of \d+)?)\b.*\b(items|attributes|events|purchases|objects|updates)\b/i,
  /\b(items|attributes|events|purchases|objects|updates)\b.*\b(per request|in one request|per api call|batch limit)\b/i,
];

function withMessage(status: number, body: string): string {
  const message = serverMessage(body);
  return message === undefined ? `HTTP ${status}` : `HTTP ${status}: ${message}`;
}

export function classifyResult(result: PostResult, wallNowMs: number): Verdict {
  if (result.kind === 'failed') {
    if (result.aborted) return { kind: 'aborted', sent: result.sent };
    if (result.cause === 'no-tls') {
      // every request would meet the same answer: say what to change, once
      return { kind: 'fatal', message: 'the server does not speak TLS: try http:// instead of https:// in --url' };
    }
    if (result.cause === 'timeout') {
      return result.sent ? { kind: 'unknown', reason: result.reason } : { kind: 'retry', reason: `could not send the request: ${result.reason}` };
    }
    return result.sent
      ? { kind: 'unknown', reason: `connection broke after the request was sent: ${result.reason}` }
      : { kind: 'retry', reason: `could not send the request: ${result.reason}` };
  }
  const { status, headers, body } = result;
  if (status >= 200 && status < 300) {
    // a success's counts and errors are in its body: without all of it, what was applied is not known
    if (result.cutOff === true) return { kind: 'unknown', reason: `connection broke while the answer came (HTTP ${status})` };
    const response = parseSuccess(body);
    return response === undefined ? { kind: 'not-endpoint', status, answer: describeAnswer(status, headers, body) } : { kind: 'accepted', response };
  }
  if (status === 429) return { kind: 'rate-limited', waitMs: rateLimitWaitMs(headers, wallNowMs) };
  if (status === 401) {
    return { kind: 'fatal', status, message: `the server refused the API key (${withMessage(status, body)}); check --api-key or TRACK_API_KEY` };
  }
  if (status === 403) {
    return { kind: 'fatal', status, message: `the API key lacks the users.track permission (${withMessage(status, body)})` };
  }
  if (status === 404 || status === 405) {
    return { kind: 'fatal', status, message: `nothing accepts POST /users/track at this URL (${withMessage(status, body)}); check --url` };
  }
  if (status >= 300 && status < 400) {
    const location = headers.location === undefined ? '' : ` to ${headers.location}`;
    return { kind: 'fatal', status, message: `the server redirected (HTTP ${status})${location}; use the final URL in --url` };
  }
  if (status === 408 || status >= 500) {
    return {
      kind: 'retry',
      reason: withMessage(status, body),
      minDelayMs: parseRetryAfter(headers['retry-after'], serverNow(headers, wallNowMs)),
    };
  }
  if (status === 400) {
    const errors = minorEntries(body);
    if (errors !== undefined) return { kind: 'reject', status, message: withMessage(status, body), errors };
    const message = serverMessage(body) ?? '';
    if (OVER_BATCH_LIMIT.some((pattern) => pattern.test(message))) {
      // every request of the run is built to the same limits: all of them would be refused
      return {
        kind: 'fatal',
        status,
        message:
          `the server refused a request as over its batch limit (${withMessage(status, body)}); ` +
          'send fewer items a request: --limits mau (50 across the arrays) or legacy (75 in each), or --max-total N / --max-per-array N',
      };
    }
  }
  if (status >= 400) return { kind: 'reject', status, message: withMessage(status, body) };
  return { kind: 'retry', reason: `unexpected HTTP ${status}` };
}
