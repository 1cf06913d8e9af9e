// `npm run docs:config`: rewrites the verifier block of docs/configuration.md from the verifier's
// one configuration model (verifier/src/config-reference.ts).
import { readFileSync, writeFileSync } from 'node:fs';
import { withReference } from '../verifier/src/config-reference.js';

const file = new URL('../docs/configuration.md', import.meta.url);
writeFileSync(file, withReference(readFileSync(file, 'utf8')));
