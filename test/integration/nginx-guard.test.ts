// Guard: every location of the RENDERED NGINX config that runs auth_request must refuse a missing
// and a garbage token with 401 and no secret. A future `return` (which runs before auth_request)
// or a lost include in any protected location fails here, whatever its path.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PAYMENTS_POLICY } from '../../stack/service-env.js';
import type { Stack } from '../../stack/start-stack.js';
import { call, expectDenied } from '../support/gate-table.js';
import { startSuiteStack } from '../support/local-target.js';
import {
  hasAuthRequest,
  listLocations,
  locationMatches,
  readConfig,
  type Location,
} from '../support/nginx-config.js';
import { leakedSecrets } from '../support/secrets.js';

let stack: Stack;
let locations: Location[];

beforeAll(async () => {
  stack = await startSuiteStack();
  locations = listLocations(readConfig(stack.files.nginxConf));
}, 180_000);
afterAll(() => stack?.stop());

/**
 * Request paths a regular-expression location is known to serve: the default set and the dev
 * verifier's named set (/secret/<name> asks for policy <name>, stack/service-env.ts).
 */
const REGEX_SAMPLES = ['/secret', `/secret/${PAYMENTS_POLICY}`];

/** The request paths that reach a location: exact and prefix paths as written, regex samples. */
function samplePaths(location: Location): string[] {
  if (location.modifier === '~' || location.modifier === '~*') {
    const samples = REGEX_SAMPLES.filter((uri) => locationMatches(location, uri));
    if (samples.length === 0)
      throw new Error(`regex location "${location.path}" needs a sample path in this guard`);
    return samples;
  }
  return [location.path];
}

describe('protected locations in the rendered NGINX config', () => {
  it('finds /secret among the locations that run auth_request', () => {
    const protectedPaths = locations.filter(hasAuthRequest).flatMap(samplePaths);
    expect(protectedPaths).toContain('/secret');
  });

  it('refuses a missing and a garbage token with 401 and no secret at every protected location', async () => {
    const checked: string[] = [];
    for (const location of locations.filter(hasAuthRequest)) {
      if (location.path.startsWith('@')) continue;
      for (const sample of samplePaths(location)) {
        const url = `${stack.urls.gate}${sample}`;
        // An internal location (reached by a rewrite only) is not there for a client at all.
        const refused = location.body.some((d) => d.name === 'internal') ? 404 : 401;
        expectDenied(await call(url), refused);
        expectDenied(await call(url, 'garbage.token.value'), refused);
        checked.push(sample);
      }
    }
    expect(checked.length).toBeGreaterThan(0);
  });

  it('never hands out a secret without a token at any other location either', async () => {
    for (const location of locations) {
      if (location.path.startsWith('@') || location.modifier?.startsWith('~')) continue;
      if (location.body.some((directive) => directive.name === 'internal')) continue;
      const answer = await call(`${stack.urls.gate}${location.path}`);
      expect({ path: location.path, leaked: leakedSecrets(answer.body) }).toEqual({
        path: location.path,
        leaked: [],
      });
    }
  });

  it('keeps /_verify internal: a direct request is a 404, not the verifier', async () => {
    const answer = await call(`${stack.urls.gate}/_verify`, await stack.mintToken());
    expect(answer.status).toBe(404);
  });
});
