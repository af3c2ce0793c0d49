// What `track inspect` and `track cleanup` do to an emulator database file.
import { normalizeEmail, normalizePhone, type UserAlias } from '../model/index.js';
import { exportUser } from './export.js';
import { storeFailure } from './store.js';
import type { Profile } from './profile-rows.js';
import type { Store } from './store.js';

export interface InspectFilter {
  externalId?: string;
  serviceId?: string;
  email?: string;
  phone?: string;
  alias?: UserAlias;
}

const named = (filter: InspectFilter): boolean => Object.values(filter).some((v) => v !== undefined);

/** How many profiles match every given filter (all profiles when none is given). */
export function countProfiles(store: Store, filter: InspectFilter): number {
  if (!named(filter)) return store.profileCount();
  let count = 0;
  for (const _ of matchingProfiles(store, filter)) count += 1;
  return count;
}

/** The profiles an identifier names: by an index, never by reading every profile. */
function identified(store: Store, filter: InspectFilter): Iterable<Profile> {
  const found = (p: Profile | undefined): Profile[] => (p === undefined ? [] : [p]);
  if (filter.externalId !== undefined) return found(store.profileByExternalId(filter.externalId));
  if (filter.serviceId !== undefined) return found(store.profileByServiceId(filter.serviceId));
  if (filter.alias !== undefined) return found(store.profileByAlias(filter.alias));
  const sharing = filter.email !== undefined ? store.profilesSharing('email', normalizeEmail(filter.email)) : store.profilesSharing('phone', phoneOf(filter.phone!));
  // in the order they were created, as every listing is
  return sharing.map((p) => p.id).sort((a, b) => a - b).flatMap((id) => found(store.profileById(id)));
}

const phoneOf = (phone: string): string => normalizePhone(phone) ?? phone;

/**
 * Profiles matching every given filter (all when none is given), at most `limit`, in the order they
 * were created, read as they are asked for.
 */
function* matchingProfiles(store: Store, filter: InspectFilter, limit = Infinity): Generator<Profile> {
  if (limit <= 0) return;
  const aliasId = filter.alias === undefined ? undefined : store.idByAlias(filter.alias);
  const email = filter.email === undefined ? undefined : normalizeEmail(filter.email);
  const phone = filter.phone === undefined ? undefined : phoneOf(filter.phone);
  let given = 0;
  for (const p of named(filter) ? identified(store, filter) : store.eachProfile()) {
    if (filter.serviceId !== undefined && p.serviceId !== filter.serviceId) continue;
    if (filter.alias !== undefined && p.id !== aliasId) continue;
    if (email !== undefined && p.email !== email) continue;
    if (phone !== undefined && p.phone !== phone) continue;
    yield p;
    if ((given += 1) >= limit) return;
  }
}

/**
 * Profiles matching every given filter (all profiles when none is given), at most `limit`, with their
 * events and purchases: one at a time, read as the caller asks, so a file of millions is never in
 * memory at once.
 */
export function* eachInspectedProfile(store: Store, filter: InspectFilter, limit?: number): Generator<Record<string, unknown>> {
  for (const p of matchingProfiles(store, filter, limit)) {
    yield {
      ...exportUser(store, p),
      push_token_import: p.pushImport || undefined,
      created_at: p.createdAt,
      updated_at: p.updatedAt,
      events: store.eventsOf(p.id).map((e) => ({ id: e.id, name: e.name, time: e.time, app_id: e.appId ?? undefined, properties: e.properties ?? undefined })),
      purchase_log: store.purchasesOf(p.id).map((x) => ({
        id: x.id, product_id: x.productId, currency: x.currency, price: x.price, quantity: x.quantity, time: x.time,
        app_id: x.appId ?? undefined, properties: x.properties ?? undefined,
      })),
    };
  }
}

/** The same, as one array: for a few profiles. */
export function inspectProfiles(store: Store, filter: InspectFilter, limit?: number): Record<string, unknown>[] {
  return [...eachInspectedProfile(store, filter, limit)];
}

/**
 * spec 2.5 rule 5: push-import profiles that hold no token any more are deleted; those still
 * holding one are left alone. Returns how many were deleted (none when dryRun).
 */
export function cleanupPushImports(store: Store, dryRun = false): { deleted: number; kept: number } {
  try {
    return store.transaction(() => {
      const orphans = store.orphanPushImportIds();
      const total = store.pushImportCount();
      if (!dryRun) store.deleteProfiles(orphans);
      return { deleted: dryRun ? 0 : orphans.length, kept: total - orphans.length };
    });
  } catch (error) {
    if (!String((error as { code?: unknown }).code).startsWith('SQLITE_BUSY')) throw error;
    throw new Error(`${storeFailure(error, store.path)} for over 5 s: nothing was deleted; run it again once that program's write has ended`);
  }
}
