// The start-time check of the secret sets NGINX will serve: the same rules njs applies per
// generation (nginx/njs/secret-sets.js), run once before NGINX starts so an ambiguous or broken
// secrets file stops the start with a message instead of answering 503 later.
import { readFileSync } from 'node:fs';
// @ts-expect-error -- njs JavaScript, type-checked by nginx/njs/tsconfig.json, not by this project
import untypedSets from '../../nginx/njs/secret-sets.js';

const secretSets = untypedSets as {
  resolveStore(
    file: unknown,
    envText: string | undefined,
    clientsIssuer: string,
  ): { store: unknown } | { problem: string };
};

/**
 * Throws a TypeError naming the problem (never a value) when the secrets source NGINX would use —
 * `SECRETS` when set, else the file at `SG_SECRETS_FILE` — cannot be served unambiguously.
 */
export function assertServableSecrets(env: Readonly<Record<string, string | undefined>>): void {
  const envText = env.SECRETS;
  let file: unknown;
  if (!envText) {
    const path = env.SG_SECRETS_FILE ?? '';
    try {
      file = JSON.parse(readFileSync(path, 'utf8')) as unknown;
    } catch {
      throw new TypeError(`secrets file "${path}" cannot be read as JSON`);
    }
  }
  const result = secretSets.resolveStore(file, envText, env.SG_SECRETS_ISSUER ?? '');
  if ('problem' in result) throw new TypeError(result.problem);
}
