// ESLint for the whole repository: typescript-eslint's type-checked recommendations, each file
// checked against the tsconfig that owns it, plus the layout rule that product code never imports
// from the harness (docs/architecture.md).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const harnessImport = {
  regex: '^(\\.\\./)+(stack|idp|perf|bench|stresstest|test)/',
  message: 'product code must not import from the harness (docs/architecture.md, "Layout")',
};
const verifierImport = {
  regex: '^(\\.\\./)+verifier/',
  message: 'a workspace package must not import the verifier (docs/architecture.md, "Layout")',
};
const testSupportImport = {
  regex: '(^|/)testing/',
  message: 'test support is for tests only',
};

// Folders by concern inside verifier/src, arrows pointing inward (docs/architecture.md, "Layout"):
// config/ is the innermost ring, then token/, then decision/ (which declares what it asks of its
// plugins in decision/decision.ts); dpop/, revocation/, cloudfront/ and minted/ are plugins that implement
// those contracts, http/ is the transport edge, and only service.ts and main.ts (the composition
// root) wire everything together. Each folder lists the folders it must never import.
const FORBIDDEN = {
  config: ['token', 'decision', 'http', 'dpop', 'revocation', 'cloudfront', 'minted'],
  token: ['decision', 'http', 'dpop', 'revocation', 'cloudfront', 'minted'],
  decision: ['http', 'dpop', 'revocation', 'cloudfront', 'minted'],
  http: ['dpop', 'revocation', 'cloudfront', 'minted'],
  dpop: ['http', 'revocation', 'cloudfront', 'minted'],
  revocation: ['http', 'dpop', 'cloudfront', 'minted'],
  cloudfront: ['http', 'dpop', 'revocation', 'minted'],
  minted: ['http', 'dpop', 'revocation', 'cloudfront'],
};
const compositionRoot = {
  regex: '^\\.\\./(service|main)\\.js$',
  message: 'only the composition root (service.ts, main.ts) wires the folders together',
};
const arrowRules = Object.entries(FORBIDDEN).map(([folder, forbidden]) => ({
  files: [`verifier/src/${folder}/**/*.ts`],
  ignores: ['**/*.test.ts'],
  rules: {
    'no-restricted-imports': [
      'error',
      {
        patterns: [
          harnessImport,
          testSupportImport,
          compositionRoot,
          {
            regex: `^\\.\\./(${forbidden.join('|')})/`,
            message: `verifier/src/${folder}/ must not import ${forbidden.join('/, ')}/: arrows point inward (docs/architecture.md, "Layout")`,
          },
        ],
      },
    ],
  },
}));

export default tseslint.config(
  {
    ignores: [
      '**/dist/**',
      'node_modules/**',
      'test-results/**',
      // Reproductions of the original study's gates, kept as they were published (docs/study.md).
      'stresstest/baselines/**',
      'stresstest/compose/*.mjs',
      // Scripts a container runs with plain node, no build (typed by their .d.mts, tested by
      // test/integration/compose-file.test.ts).
      'stack/compose/*.mjs',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // `_name` marks a parameter a signature needs but the body does not (a callback's slot).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
      // Rethrowing what a catch received (typed `unknown`) is fine; literals are not.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingUnknown: true }],
    },
  },
  {
    // Test fakes implement async interfaces with synchronous bodies, and `expect.any()` and
    // parsed fixtures are `any` by design.
    files: ['**/*.test.ts'],
    rules: {
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
    },
  },
  {
    // njs modules: plain JavaScript type-checked against njs-types (nginx/njs/tsconfig.json);
    // njs 0.7.9 has no optional catch binding, and NGINX defines a few globals.
    files: ['nginx/njs/*.js'],
    languageOptions: {
      // `console`: the secret-set watcher's step (secret-sets-cli.js) runs in the njs CLI.
      globals: { ngx: 'readonly', process: 'readonly', console: 'readonly' },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { caughtErrors: 'none' }],
      '@typescript-eslint/ban-ts-comment': ['error', { 'ts-ignore': 'allow-with-description' }],
      // JSON.parse answers `any` in JavaScript; the modules check shapes by hand right after.
      '@typescript-eslint/no-unsafe-assignment': 'off',
    },
  },
  {
    // The layout rule: product folders (packages/, verifier/, nginx/, spa/) never import from the
    // harness (stack runner, dev IdP, perf toolkit, benches, suites); product code never imports
    // the tests' own support either.
    files: [
      'packages/*/src/**/*.ts',
      'verifier/src/**/*.ts',
      'nginx/njs/**/*.{js,ts}',
      'spa/**/*.ts',
    ],
    rules: { 'no-restricted-imports': ['error', { patterns: [harnessImport] }] },
  },
  {
    files: [
      'packages/*/src/**/*.ts',
      'verifier/src/**/*.ts',
      'nginx/njs/**/*.js',
      'spa/src/**/*.ts',
    ],
    ignores: ['**/*.test.ts', 'verifier/src/testing/**'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [harnessImport, testSupportImport] }],
    },
  },
  ...arrowRules,
  {
    // The shared modules at the top (errors, logging, metrics, …) and the probe sit inside the
    // rings: they import no decision, transport or plugin code.
    files: ['verifier/src/*.ts'],
    ignores: ['**/*.test.ts', 'verifier/src/service.ts', 'verifier/src/main.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            harnessImport,
            testSupportImport,
            {
              regex: '^\\./(decision|http|dpop|revocation|cloudfront|minted)/',
              message: 'the shared top-level modules import no decision, transport or plugin code',
            },
          ],
        },
      ],
    },
  },
  {
    // A workspace package stands on its own: the verifier depends on it, never the reverse.
    files: ['packages/*/src/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [harnessImport, testSupportImport, verifierImport] },
      ],
    },
  },
  {
    // Plain JavaScript outside every tsconfig: the config itself and the packages' bin stubs.
    files: ['eslint.config.js', 'packages/*/bin/*.js'],
    ...tseslint.configs.disableTypeChecked,
  },
);
