// The three deciders of one request (an access token, and a DPoP proof when one is sent): the
// gate's own authorizer, jose with the RFC 6750 / RFC 9449 request rules written out beside it,
// and oauth4webapi's validateJwtAccessToken, which checks RFC 9068 tokens and DPoP on its own code
// (its own JOSE parsing, WebCrypto). Each answers true for "allowed".
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import {
  calculateJwkThumbprint,
  createLocalJWKSet,
  EmbeddedJWK,
  jwtVerify,
  type JWK,
  type JWTPayload,
} from 'jose';
import * as oauth from 'oauth4webapi';
import { Writable } from 'node:stream';
import { loadConfig } from '../../verifier/src/config/load.js';
import { createLogger } from '../../verifier/src/log.js';
import { createVerifierService } from '../../verifier/src/service.js';
import { manualClock } from '../../verifier/src/testing/fixtures.js';
import {
  ALGORITHMS,
  AUDIENCE,
  CLIENT_PUBLIC_JWKS,
  IAT_WINDOW,
  ISSUER,
  JWKS,
  NOW,
  ORIGIN,
  PATH,
  TOLERANCE,
  type Request,
} from './cases.js';

export interface Deciders {
  readonly gate: (request: Request) => Promise<boolean>;
  readonly jose: (request: Request) => Promise<boolean>;
  readonly oauth4webapi: (request: Request) => Promise<boolean>;
  /** RFC 7638 thumbprints of the client keys, by algorithm. */
  readonly thumbprints: ReadonlyMap<string, string>;
  close(): Promise<void>;
}

/**
 * Starts the gate (its whole verifier service with a frozen clock, the issuer's JWKS served on
 * loopback) and prepares the two oracles. oauth4webapi reads the clock from `Date.now`: the caller
 * freezes it at NOW for as long as the deciders run.
 */
export async function startDeciders(): Promise<Deciders> {
  const jwksServer: Server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(JWKS));
  });
  await new Promise<void>((resolve) => jwksServer.listen(0, '127.0.0.1', resolve));
  const { port } = jwksServer.address() as { port: number };
  const clock = manualClock(NOW);
  const file = {
    issuers: [
      {
        issuer: ISSUER,
        audience: AUDIENCE,
        jwksUri: `http://127.0.0.1:${port}/jwks`,
        algorithms: [...ALGORITHMS],
        clockTolerance: `${TOLERANCE}s`,
      },
    ],
    policies: { default: { issuers: [ISSUER], dpop: 'allowed' } },
    dpop: { algorithms: [...ALGORITHMS], iatWindow: `${IAT_WINDOW}s` },
  };
  const config = loadConfig({ VERIFIER_CONFIG: '/oracles/config.json' }, () =>
    JSON.stringify(file),
  );
  // A million decisions are not logged: only errors, to a sink that drops them.
  const silent = new Writable({ write: (_chunk, _encoding, done) => done() });
  const gate = createVerifierService(config, {
    logger: createLogger('error', silent),
    now: clock.now,
    defaultMetrics: false,
  });
  await gate.start();

  const thumbprints = new Map<string, string>();
  for (const [alg, jwk] of Object.entries(CLIENT_PUBLIC_JWKS))
    thumbprints.set(alg, await calculateJwkThumbprint(jwk, 'sha256'));

  return {
    gate: async (request) => {
      const decision = await gate.authorize({
        authorization: request.authorization,
        dpop: request.dpop,
        originalMethod: request.method,
        originalUri: PATH,
        originalOrigin: ORIGIN,
      });
      return decision.outcome === 'allow';
    },
    jose: joseDecider(),
    oauth4webapi: oauth4webapiDecider(),
    thumbprints,
    close: async () => {
      await gate.stop(0);
      jwksServer.closeAllConnections();
      await new Promise<void>((resolve) => jwksServer.close(() => resolve()));
    },
  };
}

/**
 * jose's jwtVerify for the token (the gate's options: issuer, audience, allowlist, `typ: at+jwt`,
 * `exp` required, tolerance) and for the proof (EmbeddedJWK, `typ: dpop+jwt`), with RFC 9449 §4.3
 * and §7.1 written out here: a bound token only as DPoP with a proof by its key, DPoP only with a
 * bound token; the proof's `jti`, `htm`, `htu` (WHATWG-normalised, no query or fragment), `iat`
 * within the window and `ath`. Nothing of the gate's own extra rules is applied.
 */
function joseDecider(): Deciders['jose'] {
  const keys = createLocalJWKSet(JWKS);
  const currentDate = new Date(NOW * 1000);
  return async function decide({ method, authorization, dpop }) {
    const match = /^(bearer|dpop) (.+)$/i.exec(authorization);
    if (match === null) return false;
    const scheme = match[1]!.toLowerCase();
    const token = match[2]!;
    let claims: JWTPayload;
    try {
      ({ payload: claims } = await jwtVerify(token, keys, {
        issuer: ISSUER,
        audience: AUDIENCE,
        algorithms: [...ALGORITHMS],
        typ: 'at+jwt',
        requiredClaims: ['exp'],
        clockTolerance: TOLERANCE,
        currentDate,
      }));
    } catch {
      return false;
    }
    const cnf = claims.cnf as { jkt?: unknown } | undefined;
    const jkt = typeof cnf?.jkt === 'string' ? cnf.jkt : undefined;
    if (scheme === 'bearer') return jkt === undefined;
    if (jkt === undefined || dpop === undefined) return false;
    let proof: JWTPayload;
    let jwk: JWK;
    try {
      const verified = await jwtVerify(dpop, EmbeddedJWK, {
        typ: 'dpop+jwt',
        algorithms: [...ALGORITHMS],
        currentDate,
      });
      proof = verified.payload;
      jwk = verified.protectedHeader.jwk!;
    } catch {
      return false;
    }
    const htu =
      typeof proof.htu === 'string' && URL.canParse(proof.htu) ? new URL(proof.htu) : null;
    if (htu !== null) htu.search = htu.hash = '';
    return (
      typeof proof.jti === 'string' &&
      proof.htm === method &&
      htu?.href === `${ORIGIN}${PATH}` &&
      typeof proof.iat === 'number' &&
      Math.abs(NOW - proof.iat) <= IAT_WINDOW &&
      proof.ath === createHash('sha256').update(token).digest('base64url') &&
      (await calculateJwkThumbprint(jwk, 'sha256')) === jkt
    );
  };
}

/** oauth4webapi's validateJwtAccessToken with the same issuer, audience, allowlist and tolerance. */
function oauth4webapiDecider(): Deciders['oauth4webapi'] {
  const as: oauth.AuthorizationServer = { issuer: ISSUER, jwks_uri: `${ISSUER}/jwks` };
  const jwks = JSON.stringify(JWKS);
  const options: oauth.ValidateJWTAccessTokenOptions = {
    signingAlgorithms: [...ALGORITHMS],
    [oauth.clockTolerance]: TOLERANCE,
    [oauth.customFetch]: () =>
      Promise.resolve(new Response(jwks, { headers: { 'content-type': 'application/json' } })),
  };
  return async function decide({ method, authorization, dpop }) {
    let request: globalThis.Request;
    try {
      const headers = new Headers({ authorization });
      if (dpop !== undefined) headers.set('dpop', dpop);
      request = new Request(`${ORIGIN}${PATH}`, { method, headers });
    } catch {
      return false; // headers no client can send
    }
    try {
      await oauth.validateJwtAccessToken(as, request, AUDIENCE, options);
      return true;
    } catch {
      return false;
    }
  };
}
