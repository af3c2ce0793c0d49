// What `track inspect` and `track cleanup` do to an emulator database file.
import { normalizeEmail, normalizePhone, type UserAlias } from '../model/index.js';
import { exportUser } from './export.js';
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
  return named(filter) ? matchingProfiles(store, filter).length : store.profileCount();
}

/** Profiles matching every given filter (all when none is given), at most `limit`, in the order they were created. */
function matchingProfiles(store: Store, filter: InspectFilter, limit = Infinity): Profile[] {
  // all profiles, a page at a time only when a limit asks for fewer
  if (!named(filter)) return Number.isFinite(limit) ? store.findProfiles('', limit).profiles : store.allProfiles();
  let profiles: Profile[];
  if (filter.externalId !== undefined) profiles = [store.profileByExternalId(filter.externalId)].filter((p) => p !== undefined);
  else if (filter.serviceId !== undefined) profiles = [store.profileByServiceId(filter.serviceId)].filter((p) => p !== undefined);
  else if (filter.alias !== undefined) profiles = [store.profileByAlias(filter.alias)].filter((p) => p !== undefined);
  else profiles = store.allProfiles();
  if (filter.serviceId !== undefined) profiles = profiles.filter((p) => p.serviceId === filter.serviceId);
  if (filter.alias !== undefined) {
    const id = store.idByAlias(filter.alias);
    profiles = profiles.filter((p) => p.id === id);
  }
  if (filter.email !== undefined) {
    const email = normalizeEmail(filter.email);
    profiles = profiles.filter((p) => p.email === email);
  }
  if (filter.phone !== undefined) {
    const phone = normalizePhone(filter.phone) ?? filter.phone;
    profiles = profiles.filter((p) => p.phone === phone);
  }
  return profiles.slice(0, limit);
}

/** Profiles matching every given filter (all profiles when none is given), at most `limit`, with their events and purchases. */
export function inspectProfiles(store: Store, filter: InspectFilter, limit?: number): Record<string, unknown>[] {
  return matchingProfiles(store, filter, limit).map((p) => ({
    ...exportUser(store, p),
    push_token_import: p.pushImport || undefined,
    created_at: p.createdAt,
    updated_at: p.updatedAt,
    events: store.eventsOf(p.id).map((e) => ({ id: e.id, name: e.name, time: e.time, app_id: e.appId ?? undefined, properties: e.properties ?? undefined })),
    purchase_log: store.purchasesOf(p.id).map((x) => ({
      id: x.id, product_id: x.productId, currency: x.currency, price: x.price, quantity: x.quantity, time: x.time,
      app_id: x.appId ?? undefined, properties: x.properties ?? undefined,
    })),
  }));
}

/**
 * spec 2.5 rule 5: push-import profiles that hold no token any more are deleted; those still
 * holding one are left alone. Returns how many were deleted (none when dryRun).
 */
export function cleanupPushImports(store: Store, dryRun = false): { deleted: number; kept: number } {
  return store.transaction(() => {
    const orphans = store.orphanPushImportIds();
    const total = store.pushImportCount();
    if (!dryRun) store.deleteProfiles(orphans);
    return { deleted: dryRun ? 0 : orphans.length, kept: total - orphans.length };
  });
}
