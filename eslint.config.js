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
