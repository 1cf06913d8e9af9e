// The rendered NGINX configuration has exactly one way to a secret set: one location whose files
// come from the published sets (its root, alias or try_files reaches sg-secret-sets), and it runs
// auth_request. A second location that could send a set file (an internal one reached by a
// rewrite, a named one reached by error_page, a root over the memory directory) fails here before
// any request is made.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  hasAuthRequest,
  locationMatches,
  readConfig,
  type Directive,
} from '../../test/support/nginx-config.js';
import { localNginxEnv, nginxPaths, renderNginxConfig } from './render.js';

interface Place {
  /** `location` arguments as written, or `server`/`http` for a context's own root. */
  readonly where: string;
  readonly body: readonly Directive[];
  /** The first root or alias in effect (inherited for a location that sets neither). */
  readonly root: string | undefined;
}

/** Every location with the root or alias in effect there, nested ones included. */
function places(directives: readonly Directive[], inherited?: string): Place[] {
  const own = (body: readonly Directive[]) =>
    body.find((d) => d.name === 'root' || d.name === 'alias')?.args[0];
  const found: Place[] = [];
  for (const d of directives) {
    if (!d.block) continue;
    const root = own(d.block) ?? (d.name === 'if' ? undefined : inherited);
    if (d.name === 'location') found.push({ where: d.args.join(' '), body: d.block, root });
    found.push(...places(d.block, root ?? inherited));
  }
  return found;
}

let work: string;
let setsDir: string;
let confPath: string;
let all: Place[];

beforeAll(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'sg-secret-routes-'));
  const prefix = path.join(work, 'prefix');
  const env = localNginxEnv({ prefix, memoryDir: path.join(work, 'memory') });
  ({ confPath } = await renderNginxConfig({
    templatesDir: nginxPaths.templatesDir,
    outDir: prefix,
    env,
  }));
  setsDir = path.join(env.SG_MEMORY_DIR, 'sg-secret-sets');
  all = places(readConfig(confPath));
});
afterAll(() => rm(work, { recursive: true, force: true }));

/**
 * Whether a path NGINX builds from request data can name a file under the sets directory: the
 * part before its first variable is inside it, or is the sets directory's ancestor (a root over
 * the memory directory would reach it through the URI).
 */
function reachesSets(value: string | undefined): boolean {
  if (value === undefined) return false;
  const fixed = value.split('$')[0] ?? '';
  return fixed.startsWith(setsDir) || setsDir.startsWith(fixed);
}

/**
 * try_files names files below the root too, so the root in effect decides; a `set` of a path
 * below the sets directory is how njs is told where to read one (@sg_minted_set).
 */
function sendsSets(place: Place): boolean {
  return (
    reachesSets(place.root) || place.body.some((d) => d.name === 'set' && reachesSets(d.args[1]))
  );
}

const SECRET_LOCATION = '~ ^/secret(?:/(?<sg_named_set>[a-z][a-z0-9-]{0,31}))?$';
/** Every directive of the configuration, nested ones included. */
const everywhere = (directives: readonly Directive[]): Directive[] =>
  directives.flatMap((d) => [d, ...everywhere(d.block ?? [])]);

describe('the ways to a secret set in the rendered configuration', () => {
  it('are exactly one location, which runs auth_request, and the named location its try_files ends in for minted values', () => {
    const senders = all.filter(sendsSets);
    expect(senders.map((p) => p.where)).toEqual([SECRET_LOCATION, '@sg_minted_set']);
    const [only] = senders;
    expect(only && hasAuthRequest({ modifier: '~', path: '', body: only.body })).toBe(true);
  });

  it('reach @sg_minted_set only from the secret location, after auth_request', () => {
    const directives = everywhere(readConfig(confPath));
    const naming = directives.filter(
      (d) => d.name !== 'location' && d.args.some((a) => a.includes('@sg_minted_set')),
    );
    // The map that picks it (only when the verifier sent minted values) and nothing else: no
    // error_page, no try_files, no rewrite names it directly.
    expect(naming.map((d) => `${d.name} ${d.args.join(' ')}`)).toEqual([
      'minted.none @sg_minted_set',
    ]);
    const fallback = all
      .find((p) => p.where === SECRET_LOCATION)
      ?.body.find((d) => d.name === 'try_files');
    expect(fallback?.args.at(-1)).toBe('$sg_set_fallback');
  });

  it('reach the sets by try_files only after the policy named their tree: /secret or /secret/<name>', () => {
    const [only] = all.filter(sendsSets);
    expect(only?.root).toBe(`${setsDir}/current$sg_policy_tree`);
    expect(only?.body.find((d) => d.name === 'try_files')?.args).toEqual([
      '/$sg_secret_set/secret',
      '/$sg_default_set/secret',
      '$sg_set_fallback',
    ]);
  });

  it.each([
    ['/secret', true],
    ['/secret/payments', true],
    ['/secret/a', true],
    [`/secret/a${'b'.repeat(31)}`, true],
    [`/secret/a${'b'.repeat(32)}`, false],
    ['/secret/', false],
    ['/secret/Payments', false],
    ['/secret/1payments', false],
    ['/secret/a/b', false],
    ['/secret/..', false],
    ['/secret/a.b', false],
    ['/secretx', false],
  ])('%s can reach it: %s', (uri, expected) => {
    const only = all.find((p) => p.where === SECRET_LOCATION);
    const [modifier = '', pattern = ''] = (only?.where ?? '').split(' ');
    expect(locationMatches({ modifier, path: pattern, body: [] }, uri)).toBe(expected);
  });

  it('has no error_page into a named location that could send a set, and no rewrite to one', () => {
    const named = all.filter((p) => p.where.startsWith('@'));
    expect(named.filter(sendsSets).map((p) => p.where)).toEqual(['@sg_minted_set']);
    const internal = all.filter((p) => p.body.some((d) => d.name === 'internal'));
    expect(internal.filter(sendsSets)).toEqual([]);
  });
});
