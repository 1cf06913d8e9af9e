// `npm run docs:config`: rewrites the generated blocks of docs/configuration.md,
// docs/architecture.md and verifier/config.schema.json from their one definitions: the
// verifier's configuration schema (config-reference.ts), the /verify headers (docs-contract.ts),
// the NGINX SG_ settings and the secrets file format (stack/nginx/reference.ts).
import { readFileSync, writeFileSync } from 'node:fs';
import { renderJsonSchema, withReference } from './config-reference.js';
import { writeVerifyContract } from './docs-contract.js';
import { formatJson, JSON_SCHEMA_FILE } from './json-schema-file.js';
import { withArchitectureReference, withConfigurationReference } from './nginx/reference.js';

const configuration = new URL('../docs/configuration.md', import.meta.url);
writeFileSync(
  configuration,
  withConfigurationReference(withReference(readFileSync(configuration, 'utf8'))),
);
const architecture = new URL('../docs/architecture.md', import.meta.url);
writeFileSync(architecture, withArchitectureReference(readFileSync(architecture, 'utf8')));
writeFileSync(JSON_SCHEMA_FILE, await formatJson(renderJsonSchema()));
writeVerifyContract();
