// POST /users/export/ids and `track inspect`: profiles as the read-back endpoint shows them
// (decisions.md "Reading back").
import { isPlainObject, normalizeEmail, normalizePhone, type UserAlias } from '../model/index.js';
import type { Profile, Store } from './store.js';

export type ExportedUser = Record<string, unknown>;

/** A profile in the export shape: identifiers, set standard fields, attributes and activity. */
export function exportUser(store: Store, profile: Profile): ExportedUser {
  const user: ExportedUser = {};
  if (profile.externalId !== null) user.external_id = profile.externalId;
  user.service_id = profile.serviceId;
  user.user_aliases = store.aliasesOf(profile.id);
  if (profile.email !== null) user.email = profile.fields.email ?? profile.email;
  if (profile.phone !== null) user.phone = profile.phone;
  for (const [key, value] of Object.entries(profile.fields)) if (key !== 'email') user[key] = value;
  user.custom_attributes = profile.custom;
  user.custom_events = store.eventSummary(profile.id);
  user.purchases = store.purchaseSummary(profile.id);
  user.push_tokens = store.pushTokensOf(profile.id).map((t) => ({ app_id: t.appId, token: t.token, device_id: t.deviceId }));
  user.subscription_groups = store.subscriptionsOf(profile.id).map((s) => ({
    subscription_group_id: s.groupId,
    subscription_state: s.state,
  }));
  return user;
}

function pick(user: ExportedUser, fields: readonly string[] | undefined): ExportedUser {
  if (fields === undefined) return user;
  return Object.fromEntries(Object.entries(user).filter(([key]) => fields.includes(key)));
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

/** The users a query names (each once, in the order named) and the identifiers that matched no one. */
export function exportUsers(store: Store, query: ExportQuery): { users: ExportedUser[]; invalid_user_ids: string[] } {
  const found = new Map<number, Profile>();
  const invalid: string[] = [];
  const add = (profiles: Profile[], label: string): void => {
    if (profiles.length === 0) invalid.push(label);
    for (const p of profiles) if (!found.has(p.id)) found.set(p.id, p);
  };
  const one = (p: Profile | undefined): Profile[] => (p === undefined ? [] : [p]);
  for (const id of query.external_ids ?? []) add(one(store.profileByExternalId(id)), id);
  for (const alias of query.user_aliases ?? []) add(one(store.profileByAlias(alias)), alias.alias_name);
  if (query.service_id !== undefined) add(one(store.profileByServiceId(query.service_id)), query.service_id);
  const sharing = (field: 'email' | 'phone', value: string): Profile[] =>
    store.profilesSharing(field, value).map((p) => store.profileById(p.id) as Profile);
  if (query.email_address !== undefined) add(sharing('email', normalizeEmail(query.email_address)), query.email_address);
  if (query.phone !== undefined) add(sharing('phone', normalizePhone(query.phone) ?? query.phone), query.phone);
  const users = [...found.values()].map((p) => pick(exportUser(store, p), query.fields_to_export));
  return { users, invalid_user_ids: invalid };
}
