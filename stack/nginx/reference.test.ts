import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
// @ts-expect-error -- njs JavaScript, type-checked by nginx/njs/tsconfig.json, not by this project
import untypedSets from '../../nginx/njs/secret-sets.js';
import {
  secretsFileFormat,
  withArchitectureReference,
  withConfigurationReference,
} from './reference.js';
import { localNginxEnv, nginxPaths, nginxVariables } from './variables.js';

const secretSets = untypedSets as {
  resolveStore(
    file: unknown,
    envText: string | undefined,
    clientsIssuer: string,
  ): { store: { sets: unknown[] } } | { problem: string };
};

const repoRoot = path.resolve(nginxPaths.templatesDir, '..', '..');
const read = (rel: string) => readFileSync(path.join(repoRoot, rel), 'utf8');

describe('the NGINX contracts in the docs', () => {
  it('are the generated ones: docs/configuration.md and docs/architecture.md match their definitions', () => {
    const configuration = read('docs/configuration.md');
    expect(withConfigurationReference(configuration), 'run npm run docs:config').toBe(
      configuration,
    );
    const architecture = read('docs/architecture.md');
    expect(withArchitectureReference(architecture), 'run npm run docs:config').toBe(architecture);
  });

  it("document each SG_ setting's local default as localNginxEnv() has it", () => {
    const env: Record<string, string> = localNginxEnv({ prefix: '/tmp/prefix' });
    for (const v of nginxVariables) {
      if (v.local.startsWith('(')) continue;
      const actual = env[v.name] ?? '';
      const shown = path.isAbsolute(actual) ? path.relative(repoRoot, actual) : actual;
      expect(shown, v.name).toBe(v.local);
    }
  });
});

describe('the secrets file format as documented', () => {
  it("serves the example: the default set, and one set per issuer's client", () => {
    const result = secretSets.resolveStore(
      secretsFileFormat.example,
      undefined,
      secretsFileFormat.exampleIssuer,
    );
    expect(result).toMatchObject({ store: { sets: expect.any(Array) } });
    expect('store' in result && result.store.sets).toHaveLength(3);
  });

  it.each(secretsFileFormat.refused.map((c) => [c.problem, c] as const))(
    'refuses what the docs say it refuses: %s',
    (problem, c) => {
      expect(secretSets.resolveStore(c.file, undefined, c.clientsIssuer)).toEqual({ problem });
    },
  );
});
