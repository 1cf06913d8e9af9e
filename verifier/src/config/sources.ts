// Where each setting `--print-config` shows came from: a VERIFIER_* variable, the file
// VERIFIER_CONFIG names, or (anything not listed) its default or its issuer's preset. Read from the
// same two sources the loader reads, by the same rows (env.ts), so the list cannot disagree with it.
import { ENVIRONMENT } from './env.js';
import type { FileReader } from './values.js';

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Every leaf path of a JSON document (`cache.maxTtl`, `issuers[0].audience`). */
function leaves(value: unknown, at: string, out: string[]): string[] {
  if (Array.isArray(value) && value.some((item) => isObject(item)))
    value.forEach((item, index) => leaves(item, `${at}[${index}]`, out));
  else if (isObject(value) && !('file' in value || 'env' in value))
    for (const [key, item] of Object.entries(value))
      leaves(item, at === '' ? key : `${at}.${key}`, out);
  else if (at !== '') out.push(at);
  return out;
}

/**
 * `path → source` for every setting given explicitly: `env VERIFIER_…` for a variable (which wins
 * over the file), `file` for one the file writes. A setting not listed has its default (or its
 * preset's value).
 */
export function settingSources(env: NodeJS.ProcessEnv, read: FileReader): Record<string, string> {
  const sources: Record<string, string> = {};
  const file = env.VERIFIER_CONFIG?.trim();
  if (file) {
    try {
      const document: unknown = JSON.parse(read(file));
      for (const path of leaves(document, '', [])) if (path !== '$schema') sources[path] = 'file';
    } catch {
      // The loader has already said what is wrong with the file.
    }
  }
  for (const { env: name, path } of ENVIRONMENT)
    if (path !== '' && env[name]?.trim()) sources[path] = `env ${name}`;
  return Object.fromEntries(Object.entries(sources).sort(([a], [b]) => a.localeCompare(b)));
}
