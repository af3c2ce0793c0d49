// Which identifier names an item's user (spec 2.3 and 4; decisions.md "Identifying the user").
import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import type { ArrayName, UserAlias } from './types.js';

export const PRIMARY_IDENTIFIERS = ['external_id', 'user_alias', 'service_id'] as const;
export type PrimaryIdentifier = (typeof PRIMARY_IDENTIFIERS)[number];

export type Identity =
  | { by: 'external_id'; value: string }
  | { by: 'user_alias'; value: UserAlias }
  | { by: 'service_id'; value: string }
  | { by: 'email'; value: string }
  | { by: 'phone'; value: string }
  | { by: 'anonymous' };

/** Digits and the punctuation of a written phone number, with no `+`: a number without a country code. */
const NATIONAL_FORM = /^[0-9 ().-]+$/;

/** The regions of U.S. numbers: the states', and the territories' that have area codes of their own. */
const US_REGIONS: ReadonlySet<string> = new Set(['US', 'PR', 'VI', 'GU', 'MP', 'AS']);

/**
 * E.164 form of a valid phone number, or undefined when the library says it is not valid. A number
 * without a country code is read as U.S. when it is a valid 10-digit U.S. number (`4155552671`,
 * `(415) 555-2671`; a territory's, `7872345678` in Puerto Rico), as the service documents; any other
 * is not valid, a number of another country that shares the U.S. country code among them (Canada's
 * `6135550123`, Jamaica's `8762345678`): it is valid written with it (`+1 876 234 5678`).
 */
export function normalizePhone(value: string): string | undefined {
  const parsed = parsePhoneNumberFromString(value);
  if (parsed !== undefined) return parsed.isValid() ? parsed.number : undefined;
  const text = value.trim();
  if (!NATIONAL_FORM.test(text) || text.replace(/[^0-9]/g, '').length !== 10) return undefined;
  const national = parsePhoneNumberFromString(text, 'US');
  return national !== undefined && national.isValid() && US_REGIONS.has(national.country ?? '') ? national.number : undefined;
}

/**
 * Emails match case-insensitively (decisions.md), so they are stored and looked up in lower case. A
 * valid email holds no whitespace (emailProblem()), so the trim changes no key of one: it places a
 * refused row under its user (its shard, docs/pipelines.md) and reads a lookup a person typed.
 */
export function normalizeEmail(value: string): string {
  return value.trim().toLowerCase();
}

const INVALID_EMAIL = 'is not a valid email address';

/**
 * Why an email is not one the service takes (the message after `email: `), or undefined when it is.
 * decisions.md sets no syntax; the service documents these rules: `local@domain.tld` with one `@`
 * and a dot inside the domain, at most 255 characters, no whitespace anywhere, ASCII or Unicode (the
 * API answers 400: nothing is trimmed), a local part that neither starts nor ends with a period (a
 * period goes only between characters), and a domain in ASCII (a non-ASCII one is given in
 * Punycode). One pass over the text, with no regular expression but for a non-ASCII character.
 */
export function emailProblem(value: string): string | undefined {
  if (value.length > 255) return INVALID_EMAIL;
  let at = -1;
  let dot = -1;
  let asciiDomain = true;
  for (let i = 0; i < value.length; i += 1) {
    const c = value.charCodeAt(i);
    if (c === 64) {
      if (at !== -1) return INVALID_EMAIL;
      at = i;
    } else if (c === 46) {
      if (at !== -1 && i > at + 1 && i < value.length - 1) dot = i;
    } else if (c === 32 || (c >= 9 && c <= 13) || (c > 127 && UNICODE_SPACE.test(value[i]))) {
      return `${INVALID_EMAIL} (it has ${spaceName(c)} ${spacePlace(value, i)})`;
    } else if (c > 127 && at !== -1) asciiDomain = false;
  }
  if (at <= 0 || dot === -1) return INVALID_EMAIL;
  if (value.charCodeAt(0) === 46) return `${INVALID_EMAIL} (the part before the @ starts with a period)`;
  if (value.charCodeAt(at - 1) === 46) return `${INVALID_EMAIL} (the part before the @ ends with a period)`;
  if (!asciiDomain) return `${INVALID_EMAIL} (its domain is not ASCII: give it in Punycode, xn--...)`;
  return undefined;
}

/** Whether the service takes an email (emailProblem() finds nothing wrong with it). */
export function isPlausibleEmail(value: string): boolean {
  return emailProblem(value) === undefined;
}

const UNICODE_SPACE = /\s/;

function spaceName(c: number): string {
  if (c === 32) return 'a space';
  if (c === 9) return 'a tab';
  if (c === 10 || c === 13) return 'a line break';
  if (c === 0xa0) return 'a no-break space (U+00A0)';
  return `whitespace (U+${c.toString(16).toUpperCase().padStart(4, '0')})`;
}

/** Where the first whitespace, at `i`, is: at the start, at the end (all after it is whitespace too), or inside. */
function spacePlace(value: string, i: number): string {
  if (i === 0) return 'at its start';
  for (let j = i + 1; j < value.length; j += 1) {
    const c = value.charCodeAt(j);
    if (!(c === 32 || (c >= 9 && c <= 13) || (c > 127 && UNICODE_SPACE.test(value[j])))) return 'inside it';
  }
  return 'at its end';
}

/**
 * Adds a problem for each identifier holding a NUL character (U+0000). Identifiers are matched as
 * text, and many systems end text at a NUL: `u1\u0000a` and `u1\u0000b` would be one user there.
 */
export function checkNulInIdentifiers(item: Record<string, unknown>, problems: string[]): void {
  // fields read by name, not through a list of keys: this runs for every row of a file
  const { external_id, service_id, email, phone, user_alias } = item;
  if (holdsNul(external_id)) problems.push(`external_id: ${NUL_PROBLEM}`);
  if (holdsNul(service_id)) problems.push(`service_id: ${NUL_PROBLEM}`);
  if (holdsNul(email)) problems.push(`email: ${NUL_PROBLEM}`);
  if (holdsNul(phone)) problems.push(`phone: ${NUL_PROBLEM}`);
  if (typeof user_alias !== 'object' || user_alias === null) return;
  const alias = user_alias as Record<string, unknown>;
  if (holdsNul(alias.alias_name)) problems.push(`user_alias.alias_name: ${NUL_PROBLEM}`);
  if (holdsNul(alias.alias_label)) problems.push(`user_alias.alias_label: ${NUL_PROBLEM}`);
}

const NUL_PROBLEM = 'must not hold a NUL character (U+0000)';

function holdsNul(value: unknown): boolean {
  return typeof value === 'string' && value.indexOf('\u0000') !== -1;
}

export function primaryIdentifiersIn(item: Record<string, unknown>): PrimaryIdentifier[] {
  return PRIMARY_IDENTIFIERS.filter((key) => item[key] !== undefined && item[key] !== null);
}

/**
 * The identifier that names the user of an item the validator accepted: the one primary
 * identifier, else email (which wins over phone), else phone; anonymous for a push token import.
 * `push_token_import` belongs to the attributes object only (spec 2.5): on an event or a purchase
 * it is a field the item does not have, and names no one.
 */
export function identityOf(item: Record<string, unknown>, kind: ArrayName): Identity {
  if (item.push_token_import === true && kind === 'attributes') return { by: 'anonymous' };
  if (typeof item.external_id === 'string') return { by: 'external_id', value: item.external_id };
  if (item.user_alias !== undefined && item.user_alias !== null) {
    return { by: 'user_alias', value: item.user_alias as UserAlias };
  }
  if (typeof item.service_id === 'string') return { by: 'service_id', value: item.service_id };
  if (typeof item.email === 'string') return { by: 'email', value: normalizeEmail(item.email) };
  if (typeof item.phone === 'string') return { by: 'phone', value: normalizePhone(item.phone) ?? item.phone };
  return { by: 'anonymous' };
}

/** A stable text key for an identity, for grouping items of one user (batching, ordering). */
export function identityKey(identity: Identity): string {
  switch (identity.by) {
    case 'anonymous':
      return 'anonymous';
    case 'user_alias':
      return `user_alias:${identity.value.alias_label}\u0000${identity.value.alias_name}`;
    default:
      return `${identity.by}:${identity.value}`;
  }
}

const FNV_PRIME = 16777619;

/** FNV-1a over the UTF-16 units of text, continuing from h. */
function fnv(text: string, h: number): number {
  for (let i = 0; i < text.length; i += 1) h = Math.imul(h ^ text.charCodeAt(i), FNV_PRIME);
  return h;
}

/** textHash() of a text: a 30-bit FNV-1a hash (a small integer, which V8 keeps without allocating). */
export function textHash(text: string): number {
  return fnv(text, 0x811c9dc5) & 0x3fffffff;
}

const PREFIX_HASHES = Object.fromEntries(
  (['external_id', 'user_alias', 'service_id', 'email', 'phone'] as const).map((by) => [by, fnv(`${by}:`, 0x811c9dc5)]),
) as Record<Exclude<Identity['by'], 'anonymous'>, number>;

/**
 * textHash(identityKey(identity)), without building the key: what the uploader groups a user's
 * items by. Keys held as numbers cost no string per item, and a long-lived Map of strings would
 * keep every one alive into the old generation. Two users sharing a hash only makes one wait for
 * the other: their order is kept, never broken.
 */
export function identityHash(identity: Exclude<Identity, { by: 'anonymous' }>): number {
  const prefix = PREFIX_HASHES[identity.by];
  if (identity.by === 'user_alias') {
    return fnv(identity.value.alias_name, fnv('\u0000', fnv(identity.value.alias_label, prefix))) & 0x3fffffff;
  }
  return fnv(identity.value, prefix) & 0x3fffffff;
}

