// Synthetic plans for delivery tests: every item carries its row number, so a test can count how
// often each row reached the server.
import type { PlannedRequest, ItemOrigin } from '../../src/model/request.js';
import { textHash } from '../../src/model/identity.js';
import type { AttributesObject, EventObject } from '../../src/model/types.js';

export interface PlanOptions {
  requests: number;
  itemsPer?: number;
  file?: string;
  /** User of the item on a row; by default every row has its own user. */
  userOf?: (row: number) => string;
  /** Rows to leave out (a resumed run skips the settled ones). */
  skip?: (file: string, line: number) => boolean;
}

/** Line of the nth row (0-based): a CSV header is line 1. */
export const lineOf = (row: number): number => row + 2;

export function buildPlan(options: PlanOptions): PlannedRequest[] {
  const per = options.itemsPer ?? 4;
  const file = options.file ?? 'users.csv';
  const userOf = options.userOf ?? ((row: number) => `u${row}`);
  const plan: PlannedRequest[] = [];
  let row = 0;
  for (let r = 0; r < options.requests; r += 1) {
    const attributes: AttributesObject[] = [];
    const events: EventObject[] = [];
    const origins: PlannedRequest['origins'] = { attributes: [], events: [], purchases: [] };
    const keys = new Set<number>();
    for (let i = 0; i < per; i += 1, row += 1) {
      const line = lineOf(row);
      if (options.skip?.(file, line)) continue;
      const user = userOf(row);
      const origin: ItemOrigin = { file, line, row: { external_id: user, row: String(row) } };
      if (row % 2 === 0) {
        attributes.push({ external_id: user, row });
        origins.attributes.push(origin);
      } else {
        events.push({ external_id: user, name: 'played', time: '2026-01-01T00:00:00Z', properties: { row } });
        origins.events.push(origin);
      }
      keys.add(textHash(`external_id:${user}`));
    }
    if (attributes.length + events.length === 0) continue;
    plan.push({ seq: plan.length, body: { attributes, events }, origins, userKeys: [...keys] });
  }
  return plan;
}

export async function* fromArray<T>(items: readonly T[]): AsyncGenerator<T> {
  for (const item of items) yield item;
}

/** The row number an item carries. */
export function rowOf(item: Record<string, unknown>): number {
  if (typeof item.row === 'number') return item.row;
  return (item.properties as { row: number }).row;
}
