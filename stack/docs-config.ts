// `npm run docs:config`: rewrites the verifier block of docs/configuration.md and
// verifier/config.schema.json from the verifier's one configuration schema
// (verifier/src/config/reference.ts).
import { readFileSync, writeFileSync } from 'node:fs';
import { renderJsonSchema, withReference } from '../verifier/src/config/reference.js';
import { formatJson, JSON_SCHEMA_FILE } from './json-schema-file.js';

const doc = new URL('../docs/configuration.md', import.meta.url);
writeFileSync(doc, withReference(readFileSync(doc, 'utf8')));
writeFileSync(JSON_SCHEMA_FILE, await formatJson(renderJsonSchema()));
