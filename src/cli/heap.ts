// V8's heap settings for `track upload`, which plans in a worker thread and sends from the main
// one: two heaps in one process, each by default free to grow a 32 MiB young generation and an old
// generation up to four times what it holds alive. Together they took a 1,000,000-row upload to
// about 200 MB, over the 150 MB an upload of any size may use; with these settings it peaks near
// 140 MB for about the same CPU time (bench/upload.bench.mjs measures both).
import { setFlagsFromString } from 'node:v8';

/**
 * The V8 flags for a command line: for an upload that sends (not a dry run), an old generation
 * grows to at most 1.3 times what survived its last full collection, in both threads. The planning
 * thread's young generation is capped where it is started (plan-thread.ts).
 */
export function heapFlagsFor(args: readonly string[]): string[] {
  if (args[0] !== 'upload' || args.includes('--dry-run')) return [];
  return ['--heap-growing-percent=30'];
}

/** Sets heapFlagsFor(args); done first, before the rest of the program is loaded. */
export function tuneHeapsFor(args: readonly string[]): void {
  for (const flag of heapFlagsFor(args)) setFlagsFromString(flag);
}
