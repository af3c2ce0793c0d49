import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['dist/**', 'node_modules/**'],
    globalSetup: ['test/helpers/build.ts'],
    reporters: ['default', './test/helpers/plain-summary.ts'],
    // Most of a test's time is spent waiting on the processes, servers and timers it starts, not
    // computing: two files at a time even on two cores (vitest's default there is one), which took
    // the suite from 617 s to 365 s on a 2-core machine with each test's time at most doubled.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
