// Whom a logged request names, kept for the request log's user filters (external_id, email, phone,
// alias): at most LOGGED_NAMES names an entry, each at most LOGGED_NAME_CHARS characters or its
// digest; and text the log keeps, as strings of their own.
import { createHash } from 'node:crypto';
import { ARRAY_NAMES, normalizeEmail, normalizePhone } from '../model/index.js';

/** The users an entry keeps for the user filters: the first this many its items name. */
export const LOGGED_NAMES = 256;
/** A user's name (an identifier) longer than this is kept as its SHA-256, which a filter's is compared with. */
const LOGGED_NAME_CHARS = 256;

/** The user filters of a query: the requests with an item naming this user by its external_id, */
export interface UserFilters {
  externalId?: string;
  /** ... its email (any case), */
  email?: string;
  /** ... its phone, */
  phone?: string;
  /** ... or its user alias. */
  alias?: { alias_name: string; alias_label: string };
}

/**
 * Text the log keeps, at most `max` characters, as a string of its own: not a slice of a larger string
 * that it would keep alive (a message may quote the start of a huge value). V8 copies strings shorter
 * than 13 characters rather than slice them.
 */
export function keptText(text: string, max: number): string {
  if (text.length < 13) return text;
  // cut before a surrogate pair rather than inside it
  const end = text.length <= max ? text.length : max - (/[\uD800-\uDBFF]/.test(text[max - 1]) ? 1 : 0);
  return Buffer.from(text.slice(0, end), 'utf8').toString('utf8');
}

/** A name as the log keeps it: a long one (no real identifier is that long) as its digest, a short one as a string of its own. */
function keptName(name: string): string {
  return name.length > LOGGED_NAME_CHARS ? `#${createHash('sha256').update(name).digest('base64')}` : keptText(name, LOGGED_NAME_CHARS);
}

/** A phone already in E.164, which needs no parsing: most are. */
const E164 = /^\+[1-9][0-9]{1,14}$/;

const userName = {
  externalId: (id: string): string => keptName(`e\u0000${id}`),
  email: (email: string): string => keptName(`m\u0000${normalizeEmail(email)}`),
  // a phone as the emulator matches it (E.164), however it was written: `4155552671` names `+14155552671`
  phone: (phone: string): string => keptName(`p\u0000${E164.test(phone) ? phone : (normalizePhone(phone) ?? phone)}`),
  alias: (name: string, label: string): string => keptName(`a\u0000${name}\u0000${label}`),
};
const NO_NAMES: ReadonlySet<string> = new Set();

/** The first LOGGED_NAMES of the names (an item may add up to four past them). */
function firstNames(names: Set<string>): ReadonlySet<string> {
  return names.size <= LOGGED_NAMES ? names : new Set([...names].slice(0, LOGGED_NAMES));
}

/**
 * Whom the items of a body name, at the top level of each item: external_id, email, phone,
 * user_alias; the first LOGGED_NAMES of them.
 */
export function namedUsers(body: unknown): ReadonlySet<string> {
  if (typeof body !== 'object' || body === null) return NO_NAMES;
  const names = new Set<string>();
  for (const name of ARRAY_NAMES) {
    const items = (body as Record<string, unknown>)[name];
    if (!Array.isArray(items)) continue;
    for (const item of items) {
      if (names.size >= LOGGED_NAMES) return firstNames(names);
      if (typeof item !== 'object' || item === null) continue;
      const { external_id: id, email, phone, user_alias: alias } = item as Record<string, unknown>;
      if (typeof id === 'string') names.add(userName.externalId(id));
      if (typeof email === 'string') names.add(userName.email(email));
      if (typeof phone === 'string') names.add(userName.phone(phone));
      const { alias_name: aliasName, alias_label: aliasLabel } = (alias ?? {}) as Record<string, unknown>;
      if (typeof aliasName === 'string' && typeof aliasLabel === 'string') names.add(userName.alias(aliasName, aliasLabel));
    }
  }
  return names.size === 0 ? NO_NAMES : firstNames(names);
}

/** The user names a query asks for; every one must be named by the request. */
export function wantedNames(query: UserFilters): string[] {
  const wanted: string[] = [];
  if (query.externalId !== undefined) wanted.push(userName.externalId(query.externalId));
  if (query.email !== undefined) wanted.push(userName.email(query.email));
  if (query.phone !== undefined) wanted.push(userName.phone(query.phone));
  if (query.alias !== undefined) wanted.push(userName.alias(query.alias.alias_name, query.alias.alias_label));
  return wanted;
}

/** `NAME:LABEL` as a user alias (the label after the last colon); a message for text that is not one. */
export function aliasFilter(text: string): UserFilters['alias'] | string {
  const at = text.lastIndexOf(':');
  if (at <= 0) return `alias: expected NAME:LABEL, got "${text}"`;
  return { alias_name: text.slice(0, at), alias_label: text.slice(at + 1) };
}

/** The user filters of a query string (external_id, email, phone, alias=NAME:LABEL); a message for a bad one. */
export function userFilters(params: URLSearchParams): UserFilters | string {
  const given = (name: string): string | undefined => params.get(name) || undefined;
  const text = given('alias');
  const alias = text === undefined ? undefined : aliasFilter(text);
  if (typeof alias === 'string') return alias;
  return { externalId: given('external_id'), email: given('email'), phone: given('phone'), alias };
}

