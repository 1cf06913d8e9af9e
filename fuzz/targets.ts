// The three parsers fuzzed and replayed: the access-token JWS path (token-shape.ts's size check,
// then token-verifier.ts's route to jwt-verifier.ts with its key set), the DPoP proof check (dpop/proof.ts) and the pushed event tokens (revocation/event-token.ts:
// back-channel logout tokens and SSF SETs). Each runs on a frozen clock with the fixed test keys,
// so a corpus replays the same way on any machine and any day.
import { createLocalJWKSet, type JWK } from 'jose';
import { loadConfig } from '../verifier/src/config/load.js';
import type { JwtIssuer } from '../verifier/src/config/model.js';
import { createProofChecker } from '../verifier/src/dpop/proof.js';
import { VerifyError } from '../verifier/src/errors.js';
import { ReceiverError } from '../verifier/src/revocation/receiver-error.js';
import {
  createLogoutTokenVerifier,
  createSetVerifier,
} from '../verifier/src/revocation/event-token.js';
import { AUDIENCE, ISSUER, publicJwk } from '../verifier/src/testing/fixtures.js';
import { createJwtVerifier } from '../verifier/src/token/jwt-verifier.js';
import { createTokenCache } from '../verifier/src/token/token-cache.js';
import { readCredentials } from '../verifier/src/token/token-shape.js';
import { createTokenVerifier } from '../verifier/src/token/token-verifier.js';
import type { KeySet } from '../verifier/src/token/key-set.js';

/** The frozen "now" of every target, in epoch seconds. */
export const NOW = Date.UTC(2026, 0, 15, 12, 0, 0) / 1000;
export const HTU = 'https://gate.test/secret';
export const LOGOUT_AUDIENCE = 'spa-demo';
export const SET_AUDIENCE = 'https://gate.test/';
export const PROOF_ACCESS_TOKEN = 'the-access-token';

export const TARGET_NAMES = ['jws', 'dpop', 'event'] as const;
export type TargetName = (typeof TARGET_NAMES)[number];

/**
 * What a target made of one input: `accepted`, a refusal by the target's own error class
 * (`refused:<code> <message>`: messages are fixed texts that never echo the input, so each names a
 * check), or anything else (`crash:<error name>`), which is always a bug.
 */
export type Outcome = 'accepted' | `refused:${string}` | `crash:${string}`;

const now = () => NOW;

/** The issuer's keys held locally: the network side of key-set.ts has its own tests. */
function localKeySet(issuer: string, keys: JWK[]): KeySet {
  const getter = createLocalJWKSet({ keys });
  return {
    issuer,
    start: async () => {},
    isReady: () => true,
    getKey: (header) => getter(header),
    refresh: () => Promise.resolve(false),
    stop: () => {},
    trustedUntilSeconds: () => Number.MAX_SAFE_INTEGER,
  };
}

/**
 * The targets, each `input → Outcome`; built once per process. `onCrash` sees the error behind
 * every `crash:` outcome, so a fuzzer can report its stack rather than only its name.
 */
export function createTargets(
  onCrash: (error: unknown) => void = () => {},
): Record<TargetName, (input: string) => Promise<Outcome>> {
  const keys = localKeySet(ISSUER, [publicJwk('rsaA'), publicJwk('rsaB'), publicJwk('ec')]);
  const config = loadConfig({ VERIFIER_CONFIG: '/fuzz/config.json' }, () =>
    JSON.stringify({
      issuers: [
        {
          issuer: ISSUER,
          audience: AUDIENCE,
          jwksUri: `${ISSUER}/jwks`,
          logoutAudiences: [LOGOUT_AUDIENCE],
        },
      ],
      policies: { default: { issuers: [ISSUER] } },
    }),
  );
  const issuer = config.issuers.get(ISSUER) as JwtIssuer;
  // The product's route for a JWT-only policy: shape, unverified `iss`, canonical signature, then
  // the issuer's verifier; its cache only skips the crypto of an input accepted before.
  const verifyToken = createTokenVerifier({
    config,
    verifiers: new Map([[ISSUER, createJwtVerifier(issuer, keys, now)]]),
    cache: createTokenCache({ ...config.cache, now }),
  });
  const policy = config.policies.get('default')!;
  const checkProof = createProofChecker({
    algorithms: ['ES256', 'ES384', 'PS256', 'RS256', 'EdDSA'],
    iatWindow: 60,
    now,
  });
  const verifyLogout = createLogoutTokenVerifier(config, new Map([[ISSUER, keys]]), now)!;
  const verifySet = createSetVerifier(ISSUER, SET_AUDIENCE, keys, now, {
    maxAge: 300,
    emailIssuer: undefined,
  });

  const outcome = async (run: () => unknown): Promise<Outcome> => {
    try {
      // The event verifiers answer a refusal up to the signature instead of throwing it.
      const result = await run();
      if (result instanceof ReceiverError) return `refused:${result.reason} ${result.message}`;
      return 'accepted';
    } catch (error) {
      if (error instanceof VerifyError) return `refused:${error.code} ${error.message}`;
      if (error instanceof ReceiverError) return `refused:${error.reason} ${error.message}`;
      onCrash(error);
      return `crash:${error instanceof Error ? error.name : typeof error}`;
    }
  };

  return {
    jws: (input) =>
      outcome(async () => {
        // As the verifier reads an Authorization header: its size first, then the token's route.
        const { token } = readCredentials(`Bearer ${input}`, false)!;
        return verifyToken(token, policy);
      }),
    dpop: (input) =>
      outcome(() => checkProof(input, { htm: 'GET', htu: HTU, accessToken: PROOF_ACCESS_TOKEN })),
    // Logout tokens and SETs share one parser (createEventVerifier): each input goes to both, and
    // the outcome is the logout receiver's unless the SET receiver accepts or crashes.
    event: async (input) => {
      const [logout, set] = [
        await outcome(() => verifyLogout(input)),
        await outcome(() => verifySet(input)),
      ];
      return set === 'accepted' || set.startsWith('crash:') ? set : logout;
    },
  };
}
