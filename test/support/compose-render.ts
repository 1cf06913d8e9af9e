// A service of docker-compose files as `docker compose config` merges them, on machines without
// Docker: each file's `environment` over the last one's, volumes merged by their path in the
// container, compose's `${A:-d}`, `${A-d}` and `${A:?message}` interpolation, and `!reset`.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, type ScalarTag } from 'yaml';
import { REPO_ROOT } from '../../stack/start-stack.js';

interface Service {
  environment?: Record<string, unknown>;
  volumes?: string[];
}

// Compose's `!reset` tag, on a map (`depends_on: !reset {}`) or a value (`NAME: !reset null`):
// the base file's value is dropped (the image's default applies).
const resets = [
  { tag: '!reset', collection: 'map', resolve: () => ({ reset: true }) },
  { tag: '!reset', resolve: () => null },
] as unknown as ScalarTag[];

/**
 * A value as `docker compose` reads it with `vars` set (innermost first): `${A:-d}` and `${A-d}`
 * take the default when A is unset (`:` also when empty); `${A:?message}` stops without A.
 */
export function interpolate(value: string, vars: Readonly<Record<string, string>>): string {
  const one = /\$\{([A-Z_]+)(:?)([-?])([^${}]*)\}/;
  let out = value;
  for (let match = one.exec(out); match; match = one.exec(out)) {
    const [all, name = '', colon, kind, rest = ''] = match;
    const given = vars[name];
    const missing = given === undefined || (colon === ':' && given === '');
    if (missing && kind === '?') throw new Error(`${name}: ${rest}`);
    out = out.replace(all, missing ? rest : (given ?? ''));
  }
  return out;
}

/** Service `name` of the compose `files` (repository paths, in command-line order) with `vars`. */
export function composeService(
  files: readonly string[],
  name: string,
  vars: Readonly<Record<string, string>>,
): { env: Record<string, string>; volumes: string[] } {
  const environment: Record<string, unknown> = {};
  const volumes = new Map<string, string>();
  for (const file of files) {
    const parsed = parse(readFileSync(join(REPO_ROOT, file), 'utf8'), {
      customTags: resets,
      merge: true,
    }) as { services: Record<string, Service> };
    const layer = parsed.services[name] ?? {};
    Object.assign(environment, layer.environment);
    for (const volume of layer.volumes ?? []) volumes.set(volume.split(':').at(-2) ?? '', volume);
  }
  const env = Object.fromEntries(
    Object.entries(environment)
      .filter((entry): entry is [string, string] => typeof entry[1] === 'string')
      .map(([key, value]) => [key, interpolate(value, vars)]),
  );
  return { env, volumes: [...volumes.values()].map((volume) => interpolate(volume, vars)) };
}
