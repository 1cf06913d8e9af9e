import { defineConfig } from 'vitest/config';

// One run covers unit tests (next to the modules) and the integration / browser suites in test/.
// The JSON report is what .ci/run counts.
export default defineConfig({
  test: {
    include: [
      'verifier/src/**/*.test.ts',
      'idp/**/*.test.ts',
      'stack/**/*.test.ts',
      'nginx/**/*.test.ts',
      'spa/src/**/*.test.ts',
      'stresstest/**/*.test.ts',
      'bench/**/*.test.ts',
      'test/**/*.test.ts',
    ],
    exclude: ['**/node_modules/**', '**/dist/**'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default', ['json', { outputFile: 'test-results/vitest.json' }]],
  },
});
