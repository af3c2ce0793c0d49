// A small disk for tests of a full disk: a tmpfs mounted at a fresh folder (root only), which a test
// may also grow, as a person makes room.
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

export const isRoot = process.getuid?.() === 0;

/** A tmpfs of `size` at `<parent>/small`, for as long as fn runs; `grow(size)` makes room on it. */
export async function withSmallDisk(parent: string, size: string, fn: (dir: string, grow: (size: string) => void) => Promise<void>): Promise<void> {
  const dir = join(parent, 'small');
  mkdirSync(dir);
  const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { encoding: 'utf8' });
  if (mounted.status !== 0) throw new Error(`mount failed: ${mounted.stderr}`);
  const grow = (bigger: string): void => {
    const remounted = spawnSync('mount', ['-o', `remount,size=${bigger}`, dir], { encoding: 'utf8' });
    if (remounted.status !== 0) throw new Error(`remount failed: ${remounted.stderr}`);
  };
  try {
    await fn(dir, grow);
  } finally {
    spawnSync('umount', [dir]);
    rmSync(dir, { recursive: true, force: true });
  }
}
