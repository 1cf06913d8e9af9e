import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { renderJsonSchema } from './config-reference.js';
import { documentSchema, issuerSchema, policySchema } from '../verifier/src/config/model.js';
import { formatJson, JSON_SCHEMA_FILE } from './json-schema-file.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const schemaPath = fileURLToPath(JSON_SCHEMA_FILE);

/** Every tracked JSON file that is a verifier configuration (it has issuers and policies). */
function exampleConfigs(): string[] {
  const files = execFileSync('git', ['ls-files', '*.json'], { cwd: root, encoding: 'utf8' });
  return files
    .split('\n')
    .filter((file) => file !== '' && /"policies"/.test(readFileSync(join(root, file), 'utf8')))
    .filter((file) => {
      const value: unknown = JSON.parse(readFileSync(join(root, file), 'utf8'));
      return typeof value === 'object' && value !== null && 'issuers' in value;
    });
}

describe('the published JSON Schema of the verifier configuration', () => {
  it('verifier/config.schema.json is what the schema renders', async () => {
    expect(readFileSync(schemaPath, 'utf8'), 'run npm run docs:config').toBe(
      await formatJson(renderJsonSchema()),
    );
  });

  it('every example configuration names it in "$schema" and is valid by it', () => {
    const examples = exampleConfigs();
    expect(examples).toEqual(expect.arrayContaining(['stack/compose/verifier.json']));
    for (const file of examples) {
      const document = JSON.parse(readFileSync(join(root, file), 'utf8')) as { $schema?: string };
      expect(document.$schema, file).toBe(relative(dirname(join(root, file)), schemaPath));
      const checked = documentSchema(issuerSchema, policySchema).safeParse(document);
      expect(checked.error?.issues ?? [], file).toEqual([]);
    }
  });
});
