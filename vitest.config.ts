import { defineConfig } from 'vitest/config';

// Two projects in one run. `unit`: the tests next to the modules and the harness's own unit tests;
// no NGINX, no browser, no network beyond loopback (`npm run test:unit`, under a minute).
// `integration`: the suites that drive real NGINX, the stack, containers or a browser.
// The JSON report is what .ci/run counts.
const unit = [
  'verifier/src/**/*.test.ts',
  'packages/*/src/**/*.test.ts',
  'idp/**/*.test.ts',
  'spa/src/**/*.test.ts',
  'nginx/njs/**/*.test.ts',
  'stack/nginx/render.test.ts',
  'stack/nginx/secret-routes.test.ts',
  'stack/nginx/settings-home.test.ts',
  'stack/worker-access.test.ts',
  'stack/json-schema-file.test.ts',
  'stack/config-reference.test.ts',
  'perf/**/*.test.ts',
  'test/oracles/**/*.test.ts',
  'fuzz/**/*.test.ts',
];

export default defineConfig({
  // The workspace packages from their sources, as tsconfig.json maps them (no build needed).
  resolve: { tsconfigPaths: true },
  test: {
    exclude: ['**/node_modules/**', '**/dist/**'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default', ['json', { outputFile: 'test-results/vitest.json' }]],
    projects: [
      { extends: true, test: { name: 'unit', include: unit } },
      {
        extends: true,
        test: {
          name: 'integration',
          include: [
            'nginx/**/*.test.ts',
            'stack/**/*.test.ts',
            'stresstest/**/*.test.ts',
            'test/**/*.test.ts',
          ],
          exclude: [...unit, '**/node_modules/**', '**/dist/**'],
        },
      },
    ],
  },
});
