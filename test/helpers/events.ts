// An events CSV whose every row carries its number (`properties.n`), and what the emulator stored of
// them: each row exactly once means 0..rows-1.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Emulator } from '../../src/index.js';

export interface EventsCsvOptions {
  /** Rows that have no event name (refused before sending). */
  bad?: (i: number) => boolean;
  /** How many users the rows cycle through (default 40: requests share users, so they go one at a time). */
  users?: number;
}

/** Writes `name` in `dir` with `rows` events and returns its path. */
export function writeEventsCsv(dir: string, rows: number, name = 'events.csv', options: EventsCsvOptions = {}): string {
  const path = join(dir, name);
  const users = options.users ?? 40;
  const lines = ['external_id,name,time,properties.n'];
  for (let i = 0; i < rows; i += 1) lines.push(`user-${i % users},${options.bad?.(i) === true ? '' : 'seeded'},2024-03-07T10:00:00Z,${i}`);
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}

/** Every `properties.n` the emulator holds, sorted (duplicates kept). */
export function storedNs(emulator: Emulator): number[] {
  return emulator.store
    .allProfiles()
    .flatMap((p) => emulator.store.eventsOf(p.id).map((ev) => (ev.properties as { n: number }).n))
    .sort((a, b) => a - b);
}

export const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);
