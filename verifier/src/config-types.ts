// The verifier's configuration as one frozen, typed object. Everything else reads only this.
import type { CloudFrontGateConfig } from './cloudfront/gate-config.js';

export type Listen =
  | { readonly kind: 'tcp'; readonly host: string; readonly port: number }
  | {
      readonly kind: 'unix';
      readonly path: string;
    };

export type TransportChoice = 'auto' | 'uws' | 'node';

interface IssuerCommon {
  /** Exact `iss` value (RFC 7519 §4.1.1); also the base for OIDC discovery. */
  readonly issuer: string;
  /** Claims tried in order for the client id answered in `X-Auth-Client`. */
  readonly clientClaims: readonly string[];
}

/** An issuer of JWT access tokens, verified locally against its JWKS. */
export interface JwtIssuer extends IssuerCommon {
  readonly type: 'jwt';
  readonly audience: string;
  /** Undefined: found through `${issuer}/.well-known/openid-configuration`. */
  readonly jwksUri: string | undefined;
  readonly algorithms: readonly string[];
  /** Seconds of leeway for `exp`, `nbf` and `iat`. */
  readonly clockTolerance: number;
  /** `at+jwt` for RFC 9068 strict mode; undefined accepts any `typ`. */
  readonly requireTyp: string | undefined;
}

/** An issuer of opaque tokens, checked through RFC 7662 token introspection. */
export interface IntrospectionIssuer extends IssuerCommon {
  readonly type: 'introspection';
  readonly endpoint: string | undefined;
  readonly clientId: string;
  readonly clientSecret: string;
  /** When set, the introspection answer's `aud` must contain it. */
  readonly audience: string | undefined;
  /** Seconds a positive answer is reused (never past the token's `exp`). */
  readonly cacheTtl: number;
  readonly timeout: number;
}

/** An issuer of opaque tokens that are valid exactly when its user-info endpoint answers 200. */
export interface UserinfoIssuer extends IssuerCommon {
  readonly type: 'userinfo';
  readonly endpoint: string | undefined;
  readonly cacheTtl: number;
  readonly timeout: number;
}

export type IssuerConfig = JwtIssuer | IntrospectionIssuer | UserinfoIssuer;

/** DPoP (RFC 9449) per policy: not read, accepted beside bearer tokens, or the only way in. */
export type DpopMode = 'off' | 'allowed' | 'required';

/** Settings shared by every policy that reads DPoP proofs. */
export interface DpopConfig {
  /** Proof algorithms (asymmetric only); also advertised in the challenge's `algs`. */
  readonly algorithms: readonly string[];
  /** Seconds a proof's `iat` may differ from now, either way; `jti`s are remembered twice as long. */
  readonly iatWindow: number;
  /** `memory` (one process) or a `redis://` / `rediss://` URL shared by every replica. */
  readonly replayStore: string;
  /** Bound of the in-process store (also the fallback when a shared store is down). */
  readonly replayMaxEntries: number;
  /** Shared HMAC key for server nonces (RFC 9449 §9); undefined: no nonces. */
  readonly nonceKey: string | undefined;
}

export interface PolicyConfig {
  readonly name: string;
  /** `iss` values this policy accepts; every one is a configured issuer. */
  readonly issuers: readonly string[];
  /** All of these must be granted (`scope` string or `scp` array). */
  readonly scopes: readonly string[];
  /** Settings for the CloudFront signer, validated by it; undefined when the policy signs nothing. */
  readonly cloudfront: CloudFrontGateConfig | undefined;
  /** DPoP for this policy (RFC 9449); `off` reads only Bearer tokens. */
  readonly dpop: DpopMode;
}

export interface VerifierConfig {
  readonly listen: Listen;
  readonly transport: TransportChoice;
  readonly logLevel: string;
  readonly issuers: ReadonlyMap<string, IssuerConfig>;
  readonly policies: ReadonlyMap<string, PolicyConfig>;
  readonly cache: {
    readonly maxEntries: number;
    readonly maxBytes: number;
    /** Seconds; an entry never outlives this nor its token's `exp`. */
    readonly maxTtl: number;
  };
  readonly jwks: {
    /** Seconds between background refreshes (shortened by a smaller `Cache-Control: max-age`). */
    readonly refresh: number;
    /** Minimum seconds between two fetches caused by unknown `kid`s. */
    readonly cooldown: number;
    /** Seconds the last good key set keeps serving after it could not be refreshed. */
    readonly maxStale: number;
  };
  /** Seconds allowed for discovery, JWKS, introspection and user-info requests. */
  readonly fetchTimeout: number;
  readonly dpop: DpopConfig;
}

/** Tokens larger than this are refused before any parsing (DESIGN.md: 8 KiB). */
export const MAX_TOKEN_BYTES = 8192;
