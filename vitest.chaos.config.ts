import { defineConfig } from 'vitest/config';

/**
 * The fault suite (test/chaos): each file runs its own Kafka and DynamoDB Local and kills or
 * stalls them, so it runs after the main suite, on its own, two files at a time.
 */
export default defineConfig({
  test: {
    globals: false,
    include: ['test/chaos/**/*.test.ts'],
    globalSetup: ['test/chaos/global-setup.ts'],
    testTimeout: 400_000,
    hookTimeout: 180_000,
    maxWorkers: 2,
    fileParallelism: true,
  },
});
