// The environment each part of the stack is started with, built in one place so the local runner
// and docker-compose.yaml stay parallel (test/integration/compose-file.test.ts compares them).
import { IDP_DEFAULTS } from '../idp/config.js';

export type ServiceName = 'idp' | 'verifier' | 'nginx';
export const SERVICE_NAMES: readonly ServiceName[] = ['idp', 'verifier', 'nginx'];

/**
 * Node flags for the verifier: a small young generation and a capped old space keep its peak RSS
 * under 128 MB with 100,000 decisions cached (`npm run bench:verifier` measures with and without);
 * one V8 worker thread instead of four, as a sidecar has one core to give it, holds ~6 MB less
 * (their allocations and stacks). verifier/Dockerfile sets the same through NODE_OPTIONS.
 */
export const VERIFIER_NODE_FLAGS = [
  '--max-semi-space-size=1',
  '--max-old-space-size=96',
  '--v8-pool-size=1',
] as const;

/**
 * The verifier's process environment beside its settings: glibc makes a malloc arena per thread
 * that allocates (V8's worker, libuv's pool), each keeping its freed pages; two arenas hold ~4 MB
 * less at the peak and idle. verifier/Dockerfile sets the same.
 */
export const VERIFIER_PROCESS_ENV: Readonly<Record<string, string>> = Object.freeze({
  MALLOC_ARENA_MAX: '2',
});

/** Default ports from docs/architecture.md. */
export const DEFAULT_PORTS: Readonly<Record<ServiceName, number>> = Object.freeze({
  nginx: 8080,
  idp: IDP_DEFAULTS.port,
  verifier: 8090,
});

/** The policy NGINX asks for on /secret and the scope it requires. */
export const SECRET_POLICY = 'secret';
export const SECRET_SCOPE = 'secrets:read';

/**
 * The high-value policy of the dev stack: the same issuer and scope as `secret`, plus step-up
 * (RFC 9470): a multi-factor sign-in (`acr`, as the dev IdP names its levels) of at most five
 * minutes ago. The SPA shows the step-up with it.
 */
export const PAYMENTS_POLICY = 'payments';
/** Where NGINX serves the Protected Resource Metadata (nginx/templates/snippets/protected-resource.conf). */
export const RESOURCE_METADATA_PATH = '/.well-known/oauth-protected-resource';
export const STEP_UP = { acrValues: ['urn:secret-gate:mfa'], maxAge: 300 } as const;

export interface Addresses {
  /** Issuer URL as tokens carry it (what browsers and the verifier agree on). */
  readonly issuer: string;
  /** JWKS URL as the verifier reaches it. */
  readonly jwksUri: string;
  readonly audience: string;
  /**
   * The issuer's opt-in to plain http on a host that is not loopback: only for a dev IdP reached
   * by a container name (compose), never for a real one.
   */
  readonly allowHttp?: boolean;
}

/**
 * The verifier's JSON config (VERIFIER_CONFIG): one issuer, the `secret` policy and the step-up
 * `payments` one. DPoP is `allowed` there: the SPA sends DPoP-bound tokens with proofs, bearer
 * tokens keep working.
 */
export function verifierConfig(addresses: Addresses): object {
  const config = withSecretPolicy(addresses.issuer, {
    type: 'jwt',
    issuer: addresses.issuer,
    audience: addresses.audience,
    jwksUri: addresses.jwksUri,
    algorithms: ['RS256', 'ES256'],
    // The dev IdP signs users out over back-channel logout to the SPA's client id.
    logoutAudiences: [IDP_DEFAULTS.clients[0]],
    ...(addresses.allowHttp === true ? { allowHttp: true } : {}),
  });
  const secret = (config.policies as Record<string, object>)[SECRET_POLICY];
  return {
    ...config,
    policies: { [SECRET_POLICY]: secret, [PAYMENTS_POLICY]: { ...secret, ...STEP_UP } },
  };
}

/**
 * The same for an IdP the stack does not run: its preset decides the issuer type and the token
 * rules, the key set comes from `jwksUri` or discovery, algorithms are the verifier's defaults.
 */
export function ownIdpVerifierConfig(idp: {
  readonly issuer: string;
  readonly audience: string;
  readonly jwksUri?: string | undefined;
  readonly preset?: string | undefined;
  readonly logoutAudiences?: readonly string[] | undefined;
}): Record<string, unknown> {
  return withSecretPolicy(idp.issuer, {
    issuer: idp.issuer,
    audience: idp.audience,
    ...(idp.preset === undefined ? {} : { preset: idp.preset }),
    ...(idp.jwksUri === undefined ? {} : { jwksUri: idp.jwksUri }),
    ...(idp.logoutAudiences?.length ? { logoutAudiences: [...idp.logoutAudiences] } : {}),
  });
}

function withSecretPolicy(issuer: string, settings: object): Record<string, unknown> {
  return {
    issuers: [settings],
    policies: {
      [SECRET_POLICY]: { issuers: [issuer], scopes: [SECRET_SCOPE], dpop: 'allowed' },
    },
  };
}

export function idpEnv(options: {
  host: string;
  port: number;
  issuer: string;
  audience: string;
  /** The gate's back-channel logout receiver, told of every sign-out. */
  logoutUri?: string;
}) {
  return {
    ...(options.logoutUri === undefined ? {} : { IDP_BACKCHANNEL_LOGOUT_URIS: options.logoutUri }),
    IDP_HOST: options.host,
    IDP_PORT: String(options.port),
    IDP_ISSUER: options.issuer,
    IDP_AUDIENCE: options.audience,
    IDP_CLIENTS: IDP_DEFAULTS.clients.join(','),
    IDP_DEV_CONTROL: 'on',
  };
}

/** `edgeKeyFile`: the key NGINX proves itself with, for a verifier on TCP (none on a socket). */
export function verifierEnv(options: { listen: string; configFile: string; edgeKeyFile?: string }) {
  return {
    VERIFIER_LISTEN: options.listen,
    VERIFIER_CONFIG: options.configFile,
    VERIFIER_LOG_LEVEL: 'info',
    ...(options.edgeKeyFile === undefined ? {} : { VERIFIER_EDGE_KEY_FILE: options.edgeKeyFile }),
  };
}
