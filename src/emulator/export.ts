// POST /users/export/ids and `track inspect`: profiles as the read-back endpoint shows them
// (decisions.md "Reading back"). The export answers in pieces, one identifier at a time, with each
// profile's custom attributes copied as stored rather than parsed and written again: its time grows
// with the identifiers asked for, and no request waits long behind it.
import { randomUUID } from 'node:crypto';
import { isPlainObject, normalizeEmail, normalizePhone, type UserAlias } from '../model/index.js';
import type { Profile } from './profile-rows.js';
import type { Store } from './store.js';

export type ExportedUser = Record<string, unknown>;

/** Most external_ids, and most user_aliases, one export request may name (decisions.md). */
export const MAX_EXPORT_IDS = 50;

/** A profile in the export shape, with `custom` in the place of its custom attributes. */
function exportShape(store: Store, profile: Profile, custom: unknown): ExportedUser {
  const user: ExportedUser = {};
  if (profile.externalId !== null) user.external_id = profile.externalId;
  user.service_id = profile.serviceId;
  user.user_aliases = store.aliasesOf(profile.id);
  if (profile.email !== null) user.email = profile.fields.email ?? profile.email;
  if (profile.phone !== null) user.phone = profile.phone;
  for (const [key, value] of Object.entries(profile.fields)) if (key !== 'email') user[key] = value;
  user.custom_attributes = custom;
  user.custom_events = store.eventSummary(profile.id);
  user.purchases = store.purchaseSummary(profile.id);
  user.push_tokens = store.pushTokensOf(profile.id).map((t) => ({ app_id: t.appId, token: t.token, device_id: t.deviceId }));
  user.subscription_groups = store.subscriptionsOf(profile.id).map((s) => ({
    subscription_group_id: s.groupId,
    subscription_state: s.state,
  }));
  return user;
}

/** A profile in the export shape: identifiers, set standard fields, attributes and activity. */
export function exportUser(store: Store, profile: Profile): ExportedUser {
  return exportShape(store, profile, profile.custom);
}

function pick(user: ExportedUser, fields: readonly string[] | undefined): ExportedUser {
  if (fields === undefined) return user;
  return Object.fromEntries(Object.entries(user).filter(([key]) => fields.includes(key)));
}

/** Stands in for the custom attributes while the rest of a user is made JSON; no stored text can hold it. */
const CUSTOM_MARK = JSON.stringify(`\u0000${randomUUID()}`);

/** One exported user as JSON text, in pieces: the stored custom attributes are spliced in as stored. */
function* userJson(store: Store, id: number, fields: readonly string[] | undefined): Generator<string | Buffer> {
  const found = store.profileForExport(id);
  if (found === undefined) return;
  const text = JSON.stringify(pick(exportShape(store, found.profile, JSON.parse(CUSTOM_MARK)), fields));
  const at = text.indexOf(CUSTOM_MARK);
  if (at === -1) {
    yield text;
    return;
  }
  yield text.slice(0, at);
  yield found.customJson;
  yield text.slice(at + CUSTOM_MARK.length);
}

export interface ExportQuery {
  external_ids?: string[];
  user_aliases?: UserAlias[];
  service_id?: string;
  email_address?: string;
  phone?: string;
  fields_to_export?: string[];
}

const isStringArray = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string');

/** The query in a parsed export body, or the reason it is not one (a 400). */
export function parseExportQuery(body: unknown): { ok: true; query: ExportQuery } | { ok: false; message: string } {
  if (!isPlainObject(body)) return { ok: false, message: 'request body must be a JSON object' };
  const q = body as Record<string, unknown>;
  if (q.external_ids !== undefined && !isStringArray(q.external_ids)) return { ok: false, message: 'external_ids: must be an array of strings' };
  if (q.user_aliases !== undefined) {
    const ok = Array.isArray(q.user_aliases) && q.user_aliases.every((a) => isPlainObject(a) && typeof a.alias_name === 'string' && typeof a.alias_label === 'string');
    if (!ok) return { ok: false, message: 'user_aliases: must be an array of {alias_name, alias_label} objects' };
  }
  for (const key of ['external_ids', 'user_aliases'] as const) {
    const count = (q[key] as unknown[] | undefined)?.length ?? 0;
    if (count > MAX_EXPORT_IDS) return { ok: false, message: `${key}: at most ${MAX_EXPORT_IDS} in one request, got ${count}` };
  }
  for (const key of ['service_id', 'email_address', 'phone'] as const) {
    if (q[key] !== undefined && typeof q[key] !== 'string') return { ok: false, message: `${key}: must be a string` };
  }
  if (q.fields_to_export !== undefined && !isStringArray(q.fields_to_export)) {
    return { ok: false, message: 'fields_to_export: must be an array of field names' };
  }
  const named = ['external_ids', 'user_aliases', 'service_id', 'email_address', 'phone'].some((k) => q[k] !== undefined);
  if (!named) return { ok: false, message: 'request must name users: external_ids, user_aliases, service_id, email_address or phone' };
  return { ok: true, query: q as ExportQuery };
}

/** Each identifier the query names, once, in the order named, with how to find its profiles' ids. */
function lookups(store: Store, query: ExportQuery): { label: string; find: () => number[] }[] {
  const one = (id: number | undefined): number[] => (id === undefined ? [] : [id]);
  const sharing = (field: 'email' | 'phone', value: string) => (): number[] => store.profilesSharing(field, value).map((p) => p.id);
  const out: { label: string; find: () => number[] }[] = [];
  for (const id of new Set(query.external_ids ?? [])) out.push({ label: id, find: () => one(store.idByExternalId(id)) });
  const aliases = new Map((query.user_aliases ?? []).map((a) => [JSON.stringify([a.alias_label, a.alias_name]), a]));
  for (const alias of aliases.values()) out.push({ label: alias.alias_name, find: () => one(store.idByAlias(alias)) });
  if (query.service_id !== undefined) {
    const id = query.service_id;
    out.push({ label: id, find: () => one(store.idByServiceId(id)) });
  }
  if (query.email_address !== undefined) out.push({ label: query.email_address, find: sharing('email', normalizeEmail(query.email_address)) });
  if (query.phone !== undefined) out.push({ label: query.phone, find: sharing('phone', normalizePhone(query.phone) ?? query.phone) });
  return out;
}

/**
 * The export's answer as JSON text in pieces, `{"message":"success","users":[...],"invalid_user_ids":[...]}`:
 * the users a query names (each once, in the order named) and the identifiers that matched no one.
 * Each identifier is looked up when its pieces are asked for, so a caller can let others in between.
 */
export function* exportChunks(store: Store, query: ExportQuery): Generator<string | Buffer> {
  yield '{"message":"success","users":[';
  const seen = new Set<number>();
  const invalid: string[] = [];
  for (const { label, find } of lookups(store, query)) {
    let found = false;
    for (const id of find()) {
      if (seen.has(id)) {
        found = true;
        continue;
      }
      // read whole before any of it is written: between pieces other requests run, and one may have
      // deleted the profile since it was found (a reset, track cleanup): then it is not there
      const pieces = [...userJson(store, id, query.fields_to_export)];
      if (pieces.length === 0) continue;
      if (seen.size > 0) yield ',';
      seen.add(id);
      found = true;
      yield* pieces;
    }
    if (!found) invalid.push(label);
  }
  yield `],"invalid_user_ids":${JSON.stringify(invalid)}}`;
}
