// A query of the request log as a library caller writes it (`emulator.requests({ status: 201 })`),
// checked as GET /_track/requests checks its parameters: a filter the log does not have, or a value
// it cannot match, is an error rather than an answer that silently holds every request, or none.
import { UsageError } from '../errors.js';
import type { RequestLogQuery } from './request-log.js';
import { aliasFilter } from './request-log-users.js';

/** A status as the log matches it: `201`, a class such as `4xx`, or `dropped` (any case). */
const STATUS_FILTER = /^([1-5][0-9][0-9]|[1-5]xx|dropped)$/i;

/** What is wrong with a status filter given as a query parameter (GET /_track/requests, the web view's page), or undefined. */
export const statusProblem = (status: string | undefined): string | undefined =>
  status === undefined || STATUS_FILTER.test(status) ? undefined : `status: expected a status such as 201, a class such as 4xx, or dropped, got "${status}"`;

/** A `limit` given as a query parameter (GET /_track/requests, the web view's page): a whole number of at least 1, `fallback` when not given; undefined when it is not one. */
export function limitParam(text: string | null, fallback: number): number | undefined {
  if (text === null || text === '') return fallback;
  return /^[0-9]+$/.test(text) && Number(text) >= 1 ? Number(text) : undefined;
}

/** Why a `limit` query parameter cannot be used. */
export const limitProblem = (text: string | null): string => `limit: expected a whole number of at least 1, got "${text}"`;

/** What emulator.requests() takes: GET /_track/requests's filters in camelCase; a status may be a number, an alias `NAME:LABEL`. */
export interface RequestsQuery extends Omit<RequestLogQuery, 'status' | 'alias'> {
  /** `201` (or 201), a class such as `4xx`, or `dropped` (any case). */
  status?: string | number;
  /** The user alias an item names: `{ alias_name, alias_label }`, or `NAME:LABEL` (the label after the last colon). */
  alias?: string | NonNullable<RequestLogQuery['alias']>;
}

const FILTERS = ['limit', 'status', 'path', 'externalId', 'email', 'phone', 'alias'];
/** The filters GET /_track/requests and the web view's requests page take as query parameters (both take `limit` too). */
export const QUERY_FILTERS = ['status', 'path', 'external_id', 'email', 'phone', 'alias'];
/** The query string's names of the user filters, which a caller may write by habit. */
const CAMEL: Record<string, string> = { external_id: 'externalId' };

const refused = (what: string): UsageError => new UsageError(`requests(): ${what}`);

function text(name: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '') throw refused(`${name}: expected text, got ${JSON.stringify(value)}`);
  return value;
}

function alias(value: unknown): RequestLogQuery['alias'] {
  if (value === undefined) return undefined;
  if (typeof value === 'string') {
    const parsed = aliasFilter(value);
    if (typeof parsed === 'string') throw refused(parsed);
    return parsed;
  }
  const given = value as { alias_name?: unknown; alias_label?: unknown } | null;
  if (typeof given !== 'object' || given === null || typeof given.alias_name !== 'string' || typeof given.alias_label !== 'string') {
    throw refused(`alias: expected "NAME:LABEL" or { alias_name, alias_label }, got ${JSON.stringify(value)}`);
  }
  return { alias_name: given.alias_name, alias_label: given.alias_label };
}

/** The query, checked; a status may be given as a number (201). */
export function checkedQuery(query: RequestsQuery | undefined): RequestLogQuery {
  if (query === undefined) return {};
  if (typeof query !== 'object' || query === null || Array.isArray(query)) throw refused(`give one object of filters, such as { status: '4xx' }, got ${JSON.stringify(query)}`);
  const given = query as unknown as Record<string, unknown>;
  for (const name of Object.keys(given)) {
    if (FILTERS.includes(name)) continue;
    throw refused(`unknown filter ${name}${CAMEL[name] === undefined ? '' : ` (the log's filter is ${CAMEL[name]})`}; the filters are ${FILTERS.join(', ')}`);
  }
  const { limit, status } = given;
  if (limit !== undefined && !(Number.isSafeInteger(limit) && (limit as number) >= 1)) throw refused(`limit: expected a whole number of at least 1, got ${JSON.stringify(limit)}`);
  if (status !== undefined && !((typeof status === 'string' || typeof status === 'number') && STATUS_FILTER.test(String(status)))) {
    throw refused(`status: expected a status such as 201, a class such as '4xx', or 'dropped', got ${JSON.stringify(status)}`);
  }
  return {
    limit: limit as number | undefined,
    status: status === undefined ? undefined : String(status),
    path: text('path', given.path),
    externalId: text('externalId', given.externalId),
    email: text('email', given.email),
    phone: text('phone', given.phone),
    alias: alias(given.alias),
  };
}
