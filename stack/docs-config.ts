// `npm run docs:config`: rewrites the verifier block of docs/configuration.md and
// verifier/config.schema.json from the verifier's one configuration schema
// (verifier/src/config/reference.ts), and docs/architecture.md's /verify header tables from their
// one definition (docs-contract.ts).
import { readFileSync, writeFileSync } from 'node:fs';
import { renderJsonSchema, withReference } from '../verifier/src/config/reference.js';
import { writeVerifyContract } from './docs-contract.js';
import { formatJson, JSON_SCHEMA_FILE } from './json-schema-file.js';

const doc = new URL('../docs/configuration.md', import.meta.url);
writeFileSync(doc, withReference(readFileSync(doc, 'utf8')));
writeFileSync(JSON_SCHEMA_FILE, await formatJson(renderJsonSchema()));
writeVerifyContract();
