import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    globals: false,
    include: [
      'shared/**/*.test.ts',
      'services/**/*.test.ts',
      'workers/**/*.test.ts',
      'infra/**/*.test.ts',
      'test/**/*.test.ts',
    ],
    // The fault suite runs on its own afterwards (vitest.chaos.config.ts).
    exclude: ['test/chaos/**', '**/node_modules/**'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // Test files share one broker and one DynamoDB Local; two workers match the 2-core target.
    maxWorkers: 2,
    fileParallelism: true,
  },
});
