// Verifier replicas for tests: the configuration the replica suites share (an issuer with
// back-channel logout and the `secret` + `strict` policies, or a DPoP policy), a DPoP-bound
// request, and the bookkeeping that stops every replica a suite built.
import { signProof, thumbprintOf } from './dpop-proof.js';
import { SPA_CLIENT } from './event-tokens.js';
import { AUDIENCE, ISSUER, mintToken } from './fixtures.js';
import { buildService, type TestService } from './service.js';

/** The test issuer as `issuers[]` holds it; `extra` adds members such as `logoutAudiences`. */
function testIssuer(jwksUri: string, extra: object = {}): object {
  return { issuer: ISSUER, audience: AUDIENCE, jwksUri, algorithms: ['RS256'], ...extra };
}

/** The test issuer accepting back-channel logout tokens addressed to the SPA client. */
export const logoutIssuer = (jwksUri: string): object =>
  testIssuer(jwksUri, { logoutAudiences: [SPA_CLIENT] });

/** One issuer with back-channel logout; `secret` checks revocation, `strict` requires it. */
export function revocationFile(jwksUri: string, extra: object = {}): object {
  return {
    issuers: [logoutIssuer(jwksUri)],
    policies: {
      secret: { issuers: [ISSUER], scopes: ['secrets:read'] },
      strict: { issuers: [ISSUER], scopes: ['secrets:read'], revocation: 'required' },
    },
    ...extra,
  };
}

/** One issuer; `secret` takes DPoP-bound tokens as `dpop` says. */
export function dpopFile(jwksUri: string, dpop: 'allowed' | 'required', extra: object = {}) {
  return {
    issuers: [testIssuer(jwksUri)],
    policies: { secret: { issuers: [ISSUER], scopes: ['secrets:read'], dpop } },
    ...extra,
  };
}

/** A request for /secret at `origin` with a fresh token bound to the `ec` key and its proof. */
export async function boundRequest(origin: string) {
  const token = await mintToken({ claims: { cnf: { jkt: await thumbprintOf('ec') } } });
  return {
    policy: 'secret',
    authorization: `DPoP ${token}`,
    dpop: await signProof({ htu: `${origin}/secret`, accessToken: token }),
    originalMethod: 'GET',
    originalUri: '/secret',
    originalOrigin: origin,
  };
}

export interface Replicas {
  /** Builds a replica (not started) and records it so that `stopAll` stops it. */
  build(env: Record<string, string>, file: unknown, files?: Record<string, string>): TestService;
  /** Stops every replica built so far; for the suite's `afterAll`. */
  stopAll(): Promise<void>;
}

export function createReplicas(): Replicas {
  const running: TestService[] = [];
  return {
    build(env, file, files) {
      const built = buildService(env, { file, ...(files === undefined ? {} : { files }) });
      running.push(built);
      return built;
    },
    async stopAll() {
      for (const built of running.splice(0)) await built.service.stop(0);
    },
  };
}

/** Polls `condition` until it holds; throws after `ms` (replicas converge asynchronously). */
export async function until(
  condition: () => boolean | Promise<boolean>,
  ms = 3_000,
): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
