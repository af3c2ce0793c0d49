// Emulator databases of a given size for the benches, written through the store itself (as requests
// would write them, without the HTTP around them): profiles, and events and purchases spread over them.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const { Store } = await import(join(ROOT, 'dist/emulator/store.js'));

/** The profiles an export asks for: each holds the same few events and purchases in every database. */
export const TARGETS = 50;
const TARGET_EVENTS = 20;
const TARGET_PURCHASES = 2;
const EVENT_NAMES = ['signup', 'login', 'view_item', 'add_to_cart'];
const ROWS_PER_TRANSACTION = 10_000;

export const targetIds = () => Array.from({ length: TARGETS }, (_, i) => `target-${i}`);

function time(i, total) {
  // the rows of a database span a year, oldest first, as they arrive
  return new Date(Date.UTC(2024, 0, 1) + Math.floor((i / Math.max(total, 1)) * 365 * 86_400_000)).toISOString();
}

/**
 * Writes a database at `path`: `profiles` profiles besides the targets, and `events` events in all
 * (one purchase per 100 events), the targets' own events and purchases spread evenly among the
 * others', so a target's rows are as far apart as the table is long. Returns the seconds it took.
 */
export function seedActivity(path, { profiles, events }) {
  const started = performance.now();
  const store = new Store(path);
  const targetRows = TARGETS * TARGET_EVENTS;
  const ids = { targets: [], others: [] };
  store.transaction(() => {
    for (const externalId of targetIds()) ids.targets.push(store.createProfile({ externalId }).id);
    for (let p = 0; p < profiles; p += 1) ids.others.push(store.createProfile({ externalId: `user-${p}` }).id);
  });
  const purchases = Math.max(Math.floor(events / 100), TARGETS * TARGET_PURCHASES);
  const every = Math.max(1, Math.floor(events / targetRows));
  let seed = 1;
  const random = () => ((seed = (seed * 48271) % 2147483647) / 2147483647);
  let nextTarget = 0;
  for (let start = 0; start < events; start += ROWS_PER_TRANSACTION) {
    store.transaction(() => {
      const rows = [];
      for (let i = start; i < Math.min(events, start + ROWS_PER_TRANSACTION); i += 1) {
        const toTarget = (i % every === 0 && nextTarget < targetRows) || ids.others.length === 0;
        const profileId = toTarget ? ids.targets[nextTarget++ % TARGETS] : ids.others[Math.floor(random() * ids.others.length)];
        rows.push({ profileId, name: EVENT_NAMES[i % EVENT_NAMES.length], time: time(i, events), appId: null, properties: { i, plan: 'pro' } });
      }
      store.insertEvents(rows);
    });
  }
  store.transaction(() => {
    const rows = [];
    for (let i = 0; i < purchases; i += 1) {
      const profileId = i < TARGETS * TARGET_PURCHASES || ids.others.length === 0 ? ids.targets[i % TARGETS] : ids.others[Math.floor(random() * ids.others.length)];
      rows.push({ profileId, productId: `sku-${i % 7}`, currency: 'USD', price: 9.5, quantity: 1, time: time(i, purchases), appId: null, properties: null });
    }
    store.insertPurchases(rows);
  });
  const counts = store.counts();
  store.close();
  return { seconds: (performance.now() - started) / 1000, counts };
}
