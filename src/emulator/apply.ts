// Applies the accepted items of one request to the store, in the order attributes, events,
// purchases (decisions.md "Events and purchases"). The caller runs this inside one transaction. An
// attributes item can still be refused here, by what the profile holds (an update past 100 KB): it
// then changes nothing, and its minor error is given back.
import { randomBytes } from 'node:crypto';
import {
  BOOLEAN_FIELDS,
  TEXT_FIELDS,
  TIME_FIELDS,
  countryCode,
  identityOf,
  isCustomAttributeName,
  normalizeEmail,
  normalizePhone,
  parseIsoTime,
  parseTimeValue,
  storedTimeZone,
  type ArrayName,
  type MinorError,
  type PushToken,
  type SubscriptionGroupUpdate,
  type UserAlias,
} from '../model/index.js';
import { describe } from '../model/checks.js';
import { isoString, nowIso, storedTime } from '../model/time.js';
import { applyCustomAttribute, UpdateTooLarge } from './attributes.js';
import { profileToChange, resolveProfile, resolveProfileId } from './resolve.js';
import type { NewEvent, NewPurchase } from './activity-rows.js';
import type { EditableProfile } from './profile-rows.js';
import type { Store } from './store.js';

type Item = Record<string, unknown>;

export interface ApplyOptions {
  arrayCap: number;
  /** Notes what was sent but not kept as sent (a time zone not set, a country not known). */
  log?: (line: string) => void;
}

/** Standard fields kept in the profile's field map (email and phone live in their own columns). */
const MAPPED_FIELDS = [
  ...TEXT_FIELDS,
  ...BOOLEAN_FIELDS,
  'dob',
  'language',
  'email_subscribe',
  'push_subscribe',
  'current_location',
  'image_url',
  'facebook',
  'twitter',
];

/** A time more than this far ahead of the server's clock is recorded at the server's time. */
const FUTURE_SLACK_MS = 60_000;

/**
 * The stored form of a standard field's value, or undefined when it is not set (decisions.md
 * "Attributes": a time zone is kept as its IANA zone, and one that is neither an IANA name nor a
 * documented display name is not set; a country that is no known code or name is kept as null).
 */
function standardValue(key: string, value: unknown, options: ApplyOptions): unknown {
  if (key === 'time_zone') {
    const zone = typeof value === 'string' ? storedTimeZone(value) : undefined;
    if (zone === undefined) {
      options.log?.(`attributes: time_zone ${describe(value)} is not an IANA time zone name nor a documented display name; not set`);
    }
    return zone;
  }
  if (key === 'country') {
    const code = typeof value === 'string' ? countryCode(value) : null;
    if (code === null) options.log?.(`attributes: country ${describe(value)} names no ISO 3166-1 country; stored as null`);
    return code;
  }
  return value;
}

function setContactFields(profile: EditableProfile, item: Item): void {
  if (typeof item.email === 'string' && identityOf(item, 'attributes').by === 'email') {
    // the email named the user: it is a lookup key, so the spelling already stored stays
    profile.fields.email ??= item.email;
  } else if (item.email === null) {
    profile.email = null;
    delete profile.fields.email;
  } else if (typeof item.email === 'string') {
    profile.email = normalizeEmail(item.email);
    profile.fields.email = item.email;
  }
  if (item.phone === null) profile.phone = null;
  else if (typeof item.phone === 'string') profile.phone = normalizePhone(item.phone) ?? item.phone;
}

function setStandardFields(profile: EditableProfile, item: Item, options: ApplyOptions): void {
  for (const key of MAPPED_FIELDS) {
    const value = item[key];
    if (value === undefined) continue;
    if (value === null) {
      delete profile.fields[key];
      continue;
    }
    const stored = standardValue(key, value, options);
    if (stored !== undefined) profile.fields[key] = stored;
  }
  for (const key of TIME_FIELDS) {
    const value = item[key];
    if (value === null) delete profile.fields[key];
    else if (typeof value === 'string') profile.fields[key] = isoString(parseTimeValue(value) as number);
  }
  // spec 2.3: a language set through this endpoint wins over what a device reports later
  if (item.language !== undefined) profile.languageFromApi = item.language !== null;
}

/**
 * Custom attributes as the item leaves them, made apart from those given (`before` itself when it
 * sets none): throws UpdateTooLarge before anything is changed.
 */
function customAfter(before: Record<string, unknown>, item: Item, options: ApplyOptions): Record<string, unknown> {
  let custom: Record<string, unknown> | undefined;
  const mergeObjects = item._merge_objects === true;
  for (const [key, value] of Object.entries(item)) {
    if (!isCustomAttributeName(key)) continue;
    custom ??= { ...before };
    applyCustomAttribute(custom, key, value, { mergeObjects, arrayCap: options.arrayCap });
  }
  return custom ?? before;
}

/** A device_id for a token sent without one (decisions.md "Attributes"). */
function newDeviceId(): string {
  return randomBytes(16).toString('hex');
}

function setPushTokens(store: Store, profile: EditableProfile, tokens: PushToken[]): void {
  // spec 2.5 rule 4: a token held by a temporary import profile moves to the identified user
  for (const t of tokens) {
    const deviceId = t.device_id ?? store.pushToken(t.app_id, t.token)?.deviceId ?? newDeviceId();
    store.setPushToken(profile.id, t.app_id, t.token, deviceId);
  }
}

function setSubscriptions(store: Store, profile: EditableProfile, groups: SubscriptionGroupUpdate[]): void {
  // spec 2.3: the update applies to the user and to every user with the same email address
  const targets = profile.email === null ? [profile.id] : store.profileIdsWithEmail(profile.email);
  if (!targets.includes(profile.id)) targets.push(profile.id);
  for (const g of groups) {
    for (const id of targets) store.setSubscription(id, g.subscription_group_id, g.subscription_state);
  }
}

/** Applies the item to the profile; `custom`: its custom attributes as the item leaves them, when worked out already (customAfter). */
function updateProfile(store: Store, profile: EditableProfile, item: Item, options: ApplyOptions, custom = customAfter(profile.custom, item, options)): void {
  setContactFields(profile, item);
  setStandardFields(profile, item, options);
  profile.custom = custom;
  store.saveProfile(profile);
  if (Array.isArray(item.push_tokens)) setPushTokens(store, profile, item.push_tokens as PushToken[]);
  if (Array.isArray(item.subscription_groups)) {
    setSubscriptions(store, profile, item.subscription_groups as SubscriptionGroupUpdate[]);
  }
}

/**
 * spec 2.5 rule 3: a temporary anonymous profile for each token not seen before; a known token is
 * ignored. Rule 1 forbids only external_id and service_id, so a user_alias on the item is, like an
 * email or a phone (decisions.md "Identifying the user"), kept on the temporary profile: on the
 * first one made, as an alias names one profile; one that already names a profile is not moved.
 */
function importPushTokens(store: Store, item: Item, options: ApplyOptions): void {
  let alias = typeof item.user_alias === 'object' && item.user_alias !== null ? (item.user_alias as UserAlias) : undefined;
  for (const token of item.push_tokens as PushToken[]) {
    if (store.pushToken(token.app_id, token.token) !== undefined) continue;
    const profile = store.newProfile({ pushImport: true });
    updateProfile(store, profile, { ...item, push_tokens: [token] }, options);
    if (alias === undefined) continue;
    if (store.idByAlias(alias) === undefined) store.addAlias(profile.id, alias);
    else options.log?.(`attributes: user_alias ${JSON.stringify(alias)} already names a profile; the temporary profile of push token ${JSON.stringify(token.token)} is made without it`);
    alias = undefined;
  }
}

function applyAttributes(store: Store, item: Item, options: ApplyOptions): void {
  if (item.push_token_import === true) {
    importPushTokens(store, item, options);
    return;
  }
  const target = profileToChange(store, item);
  if (target === undefined) return;
  // what it leaves of the custom attributes, before its profile is made or changed: an update past
  // 100 KB refuses the item here (even a new profile's: `$update` grows each element `$add` added)
  const custom = customAfter(target === 'new' ? {} : target.custom, item, options);
  const profile = target === 'new' ? resolveProfile(store, item) : target;
  if (profile !== undefined) updateProfile(store, profile, item, options, custom);
}

/**
 * The stored form of an item's time; a time more than a minute ahead of the server's clock is
 * recorded at the server's time (decisions.md "Events and purchases").
 */
function recordedTime(value: string): string {
  const stored = storedTime(value);
  // stored times are UTC text of one width for the years 0-9999, so text order is time order
  if (stored.length === 24 && stored <= nowIso()) return stored;
  return (parseIsoTime(value) as number) > Date.now() + FUTURE_SLACK_MS ? nowIso() : stored;
}

function eventOf(store: Store, item: Item): NewEvent | undefined {
  const profileId = resolveProfileId(store, item, 'events');
  if (profileId === undefined) return undefined;
  return {
    profileId,
    name: item.name as string,
    time: recordedTime(item.time as string),
    appId: typeof item.app_id === 'string' ? item.app_id : null,
    properties: (item.properties as Record<string, unknown> | undefined) ?? null,
  };
}

function purchaseOf(store: Store, item: Item): NewPurchase | undefined {
  const profileId = resolveProfileId(store, item, 'purchases');
  if (profileId === undefined) return undefined;
  return {
    profileId,
    productId: item.product_id as string,
    currency: (item.currency as string).toUpperCase(),
    price: item.price as number,
    quantity: (item.quantity as number | undefined) ?? 1,
    time: recordedTime(item.time as string),
    appId: typeof item.app_id === 'string' ? item.app_id : null,
    properties: (item.properties as Record<string, unknown> | undefined) ?? null,
  };
}

/** Resolves each item's user, then adds the rows together: nothing reads them before the request ends. */
function recorder<T>(rowOf: (store: Store, item: Item) => T | undefined, insert: (store: Store, rows: T[]) => void) {
  return (store: Store, items: readonly Item[]): void => {
    const rows: T[] = [];
    for (const item of items) {
      const row = rowOf(store, item);
      if (row !== undefined) rows.push(row);
    }
    if (rows.length > 0) insert(store, rows);
  };
}

/** Applies the items of an array not named in `rejected` ("array:index"); the minor errors of those refused here. */
const APPLIERS: Record<ArrayName, (store: Store, items: readonly Item[], rejected: ReadonlySet<string>, options: ApplyOptions) => MinorError[]> = {
  attributes: (store, items, rejected, options) => {
    const refused: MinorError[] = [];
    items.forEach((item, index) => {
      if (rejected.size > 0 && rejected.has(`attributes:${index}`)) return;
      try {
        applyAttributes(store, item, options);
      } catch (error) {
        if (!(error instanceof UpdateTooLarge)) throw error;
        options.log?.(`attributes: ${JSON.stringify(error.attribute)} would be over 100 KB as JSON after the update of attributes[${index}]; the item is refused`);
        refused.push({ type: error.message, input_array: 'attributes', index });
      }
    });
    return refused;
  },
  events: (store, items, rejected) => {
    recordEvents(store, accepted(items, 'events', rejected));
    return [];
  },
  purchases: (store, items, rejected) => {
    recordPurchases(store, accepted(items, 'purchases', rejected));
    return [];
  },
};

const recordEvents = recorder(eventOf, (store, rows) => store.insertEvents(rows));
const recordPurchases = recorder(purchaseOf, (store, rows) => store.insertPurchases(rows));
const accepted = (items: readonly Item[], name: ArrayName, rejected: ReadonlySet<string>): readonly Item[] =>
  rejected.size === 0 ? items : items.filter((_, index) => !rejected.has(`${name}:${index}`));
/** How many of an array's items `rejected` names (one key each). */
const rejectedIn = (rejected: ReadonlySet<string>, name: ArrayName): number => {
  let count = 0;
  for (const key of rejected) if (key.startsWith(`${name}:`)) count += 1;
  return count;
};

/**
 * Applies every item not named in `rejected` ("array:index"): how many of each array were
 * processed, for the arrays the request carried, and the minor errors of the items refused by what
 * the store holds (in the order of the body), which change nothing and are not counted.
 */
export function applyRequest(
  store: Store,
  body: Partial<Record<ArrayName, unknown[]>>,
  rejected: ReadonlySet<string>,
  options: ApplyOptions,
): { processed: Partial<Record<ArrayName, number>>; refused: MinorError[] } {
  const processed: Partial<Record<ArrayName, number>> = {};
  const refused: MinorError[] = [];
  for (const name of ['attributes', 'events', 'purchases'] as const) {
    const items = body[name] as Item[] | undefined;
    if (items === undefined) continue;
    const refusedHere = APPLIERS[name](store, items, rejected, options);
    refused.push(...refusedHere);
    processed[name] = items.length - rejectedIn(rejected, name) - refusedHere.length;
  }
  return { processed, refused };
}

/**
 * What a device reporting its locale does: sets `language` unless it was set through the API
 * (spec 2.3). The emulator has no device; tests and library users call this to rehearse it.
 */
export function reportDeviceLanguage(store: Store, profileId: number, language: string): boolean {
  const profile = store.profileById(profileId);
  if (profile === undefined || profile.languageFromApi) return false;
  profile.fields.language = language;
  store.saveProfile(profile);
  return true;
}

