// The stack's contract: what startStack() and the production run (production.ts) take and hand
// back, shared by the one orchestrator (orchestrate.ts) and its supervisor (supervise.ts).
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { IdpClient, TokenShape } from './idp-client.js';
import type { ServiceName } from './service-env.js';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export interface StackOptions {
  /** Ports per service; 0 (the default here) picks a free one. `npm start` passes 8080/8081/8090. */
  readonly ports?: Partial<Record<ServiceName, number>>;
  /**
   * The verifier on a unix socket in the runtime directory, which only NGINX's user (or group)
   * may reach, instead of a loopback port with an edge key (`npm start` unless given a verifier
   * port). `ports.verifier` is then unused.
   */
  readonly verifierSocket?: boolean;
  /** Directory for rendered config, runtime files and logs; a fresh temp dir when omitted. */
  readonly runtimeDir?: string;
  /** Secrets file NGINX serves from (`{ default, clients }`); the demo sets when omitted. */
  readonly secretsFile?: string;
  /** The flat `SECRETS` JSON of the study (docs/study.md); replaces the file when set. */
  readonly secrets?: string;
  /** `aud` the IdP puts in tokens and the verifier requires. */
  readonly audience?: string;
  /** Your own IdP instead of the dev IdP, which is then not started (`npm start -- --issuer`). */
  readonly ownIdp?: OwnIdp;
  /**
   * The operator's VERIFIER_* settings (`npm start` passes those of its environment): each reaches
   * the verifier (stack/verifier-settings.ts), or the start stops saying why it cannot.
   */
  readonly verifierVariables?: Readonly<Record<string, string>>;
  /**
   * The operator's policy file (`npm start -- --config FILE`): its policies replace the run's, its
   * issuers and settings join them (stack/policy-file.ts, docs/configuration.md's precedence).
   */
  readonly policyFile?: string;
  /** Extra variables per service (e.g. `{ verifier: { VERIFIER_LOG_LEVEL: 'debug' } }`). */
  readonly env?: Partial<Record<ServiceName, Record<string, string>>>;
  /**
   * The demo's minted values in the `secret` policy (stack/minted-demo.ts); `npm start` sets it.
   * `{ ttlSeconds }` shortens their lifetime so that a renewal can be watched within seconds.
   */
  readonly mintedDemo?: boolean | { readonly ttlSeconds: number };
  /** Build missing `verifier/dist` and `spa/dist` (default true); false only reports them. */
  readonly build?: boolean;
  /** Progress lines (default: silent). */
  readonly log?: (line: string) => void;
  /** Milliseconds each service may take to become ready. */
  readonly readyTimeoutMs?: number;
}

/** An issuer the stack does not start: the organisation's IdP, or one a test runs itself. */
export interface OwnIdp {
  /** Exact `iss` of its access tokens; also what the SPA signs in against (`/config.json`). */
  readonly issuer: string;
  /** JWKS URL; unset: OIDC discovery from the issuer. */
  readonly jwksUri?: string | undefined;
  /** The verifier's `audience` (defaults to the stack's `audience`, `secret-gate-api`). */
  readonly audience?: string | undefined;
  /** The verifier's issuer preset (`keycloak`, `okta`, …; docs/connect-your-idp.md). */
  readonly preset?: string | undefined;
  /** The SPA's client id at that IdP (`clientId` in `/config.json`). */
  readonly clientId?: string | undefined;
  /**
   * Client ids whose back-channel logout tokens the verifier accepts (`logoutAudiences`): the
   * receiver at `/backchannel-logout` is on when there is one.
   */
  readonly logoutAudiences?: readonly string[] | undefined;
}

export interface StackUrls {
  /** NGINX, the address a browser opens. */
  readonly gate: string;
  readonly hello: string;
  readonly secret: string;
  readonly config: string;
  readonly idp: string;
  readonly issuer: string;
  readonly tokenEndpoint: string;
  readonly verifier: string;
}

/** What a minted token should look like (see TokenShape in idp-client.ts). */
export type MintOptions = TokenShape;

export interface Stack {
  readonly urls: StackUrls;
  readonly ports: Readonly<Record<ServiceName, number>>;
  /** Variables each service was started with (only the ones the runner sets). */
  readonly env: Readonly<Record<ServiceName, Readonly<Record<string, string>>>>;
  readonly runtimeDir: string;
  /** The `aud` the verifier requires. */
  readonly audience: string;
  readonly files: {
    readonly nginxConf: string;
    readonly nginxPrefix: string;
    readonly secrets: string;
    readonly verifierConfig: string;
    readonly logs: Readonly<Record<ServiceName, string>>;
  };
  /** The dev IdP's control API (key rotation, counters, outage); it fails with an own IdP. */
  readonly idp: IdpClient;
  /** True when the stack runs against an own IdP and started no dev IdP. */
  readonly ownIdp: boolean;
  /** A fresh access token from the dev IdP (client-credentials grant unless claims are shaped). */
  mintToken(options?: MintOptions): Promise<string>;
  isRunning(name: ServiceName): boolean;
  /** Process id of a running service (its process group id too). */
  pid(name: ServiceName): number | undefined;
  /** Stops one service (SIGTERM, or SIGKILL to simulate a crash). */
  stopService(name: ServiceName, signal?: NodeJS.Signals): Promise<void>;
  /** Starts a stopped service again with the same ports and files, and waits until it is ready. */
  startService(name: ServiceName): Promise<void>;
  /** Stops everything; removes the runtime dir when the runner created it. Safe to call twice. */
  stop(): Promise<void>;
}
