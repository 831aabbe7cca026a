import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    globals: false,
    include: [
      'shared/**/*.test.ts',
      'services/**/*.test.ts',
      'workers/**/*.test.ts',
      'infra/**/*.test.ts',
      'bin/**/*.test.ts',
      'test/**/*.test.ts',
      'clients/**/*.test.ts',
      'examples/**/*.test.ts',
    ],
    // The fault suite runs on its own afterwards (vitest.chaos.config.ts).
    exclude: ['test/chaos/**', '**/node_modules/**'],
    globalSetup: ['test/global-setup.ts'],
    setupFiles: ['test/helpers/documented-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // Test files share one broker and one DynamoDB Local; two workers match the 2-core target.
    maxWorkers: 2,
    fileParallelism: true,
    // `npm test` runs the main suite with --coverage: the running code's lines and branches
    // reached by the tests (services and workers run inside the test processes), as a summary
    // in the output and an HTML report in coverage/.
    coverage: {
      provider: 'v8',
      include: ['{shared,services,workers,infra,bin}/**/*.ts'],
      exclude: ['**/*.test.ts', '**/*.d.ts'],
      reporter: ['text-summary', 'json-summary', 'html'],
      reportsDirectory: 'coverage',
    },
  },
});
