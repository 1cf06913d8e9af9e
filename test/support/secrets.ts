// The demo secret sets the stack serves, and a check that a body leaks none of their values.
import { readFileSync } from 'node:fs';
import { nginxPaths } from '../../stack/nginx/render.js';

export interface SecretsFile {
  readonly default: Record<string, string>;
  readonly clients: Record<string, Record<string, string>>;
  /** Named sets (`/secret/<name>`): the top level's shape, by policy. */
  readonly policies?: Record<string, Omit<SecretsFile, 'policies'>>;
}

export const demoSecrets = JSON.parse(
  readFileSync(nginxPaths.devSecretsFile, 'utf8'),
) as SecretsFile;

/** Every secret value of every set, the named policies' too (what must never appear in a denial). */
export function allSecretValues(secrets: SecretsFile = demoSecrets): string[] {
  const parts = [secrets, ...Object.values(secrets.policies ?? {})];
  return parts
    .flatMap((part) => [part.default ?? {}, ...Object.values(part.clients ?? {})])
    .flatMap((set) => Object.values(set))
    .filter(Boolean);
}

/** The values of `text` that are secrets (empty when it leaks none). */
export function leakedSecrets(text: string, secrets: SecretsFile = demoSecrets): string[] {
  return allSecretValues(secrets).filter((value) => text.includes(value));
}
