import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['dist/**', 'node_modules/**'],
    globalSetup: ['test/helpers/build.ts'],
    reporters: ['default', './test/helpers/plain-summary.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
