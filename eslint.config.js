import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'node_modules/**',
      '.svc/**',
      'test/browser/pages/**',
      'services/portal/assets/**',
      'test-results/**',
      'coverage/**',
      'dist/**',
      'clients/*/dist/**',
      // The framework examples: packages of their own, on their frameworks' toolchains.
      'examples/{vue,angular,next,nuxt}/**',
      'clients/typescript/src/openapi.gen.ts',
      'eslint.config.js',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    // The browser scripts, served as they are (type-checked by widget/tsconfig.json).
    files: ['widget/**/*.js'],
    languageOptions: {
      sourceType: 'script',
      globals: Object.fromEntries(
        [
          ...['window', 'document', 'navigator', 'location', 'console', 'fetch', 'URL'],
          ...['setTimeout', 'clearTimeout', 'CSSStyleSheet', 'Intl'],
        ].map((g) => [g, 'readonly']),
      ),
    },
  },
  // The running code gets the type-aware rules too; tests, whose HTTP bodies are `any` by
  // nature, keep the syntactic ones.
  ...tseslint.configs.recommendedTypeCheckedOnly.map((c) => ({
    ...c,
    files: ['{shared,services,workers,bin,infra,bench}/**/*.ts'],
    ignores: ['**/*.test.ts'],
  })),
  {
    files: ['{shared,services,workers,bin,infra,bench}/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      // An async method may have nothing to await and still keep its interface's Promise.
      '@typescript-eslint/require-await': 'off',
      complexity: ['warn', 20],
      'max-lines-per-function': ['warn', { max: 120, skipBlankLines: true, skipComments: true }],
    },
  },
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
);
