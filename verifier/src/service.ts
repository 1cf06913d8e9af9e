// Builds a running verifier from a configuration: key sets, verifiers, cache, metrics, routes and
// a transport. main.ts calls this; tests and the benchmark call it too, in-process.
import { systemClock, type Clock } from './clock.js';
import { createAuthorizer } from './decision/authorize.js';
import { createDecisionLog } from './decision/decision-log.js';
import { createCloudFrontGrant } from './cloudfront/grant.js';
import { createMintedGrant } from './minted/grant.js';
import { createMintedJwksPage, MINTED_JWKS_PATH } from './minted/jwks.js';
import type { PublicJwk } from './minted/minter-api.js';
import { createMintedMetrics } from './minted/minted-metrics.js';
import { DEFAULT_POLICY, type Listen, type VerifierConfig } from './config/model.js';
import { needsRestart } from './config/reload-plan.js';
import type { Authorize } from './decision/authorize.js';
import type { Grant } from './decision/decision.js';
import { createEndpointResolver } from './token/discovery.js';
import { createDpopRuntime } from './dpop/index.js';
import { createIssuerRuntime, type PreparedIssuers } from './token/issuer-runtime.js';
import { createKeySet, type KeySet } from './token/key-set.js';
import type { Logger } from './log.js';
import { createMetrics } from './metrics.js';
import { createTokenCache } from './token/token-cache.js';
import { createTokenVerifier } from './token/token-verifier.js';
import { redisSettingsOf } from './redis/connection.js';
import { createRevocationRuntime } from './revocation/index.js';
import { createLogThrottle } from './revocation/log-throttle.js';
import { createCallLimit } from './http/call-limit.js';
import { createEdgeCheck } from './http/edge-key.js';
import { createRoutes, createTransport } from './http/transport.js';
import { createRenderer, secretSetName } from './http/verify-answer.js';
import { withLogTrace } from './tracing/log-trace.js';
import type { Tracing } from './tracing/otel.js';

export type VerifierService = ReturnType<typeof createVerifierService>;

/** What became of a reloaded configuration (config/reloader.ts logs and counts it). */
export type ReloadOutcome =
  | { readonly applied: true; readonly generation: number; readonly dropped: number }
  | { readonly applied: false; readonly problems: readonly string[] };

/**
 * `now` is injectable for tests; the benchmark turns the process metrics off. `configDigest`
 * names the configuration file's content in `verifier_config_info` (config/reloader.ts).
 */
export function createVerifierService(
  config: VerifierConfig,
  options: {
    logger: Logger;
    now?: Clock;
    defaultMetrics?: boolean;
    tracing?: Tracing;
    configDigest?: string;
  },
) {
  const { logger } = options;
  const now = options.now ?? systemClock;
  // The live key sets, read by the metrics, readiness, the cache's trust horizon and revocation;
  // a reload changes this one map in place (token/issuer-runtime.ts).
  const keySets = new Map<string, KeySet>();
  const cache = createTokenCache({
    ...config.cache,
    now,
    trustedUntilSeconds: (issuer) => keySets.get(issuer)?.trustedUntilSeconds(),
  });
  const metrics = createMetrics(cache, keySets, options.defaultMetrics);
  const issuers = createIssuerRuntime({ keySets, cache, metrics, logger, now });
  const firstIssuers = issuers.prepare(config);
  issuers.commit(firstIssuers);

  const policies = [...config.policies.values()];

  // Only built when a policy reads DPoP, so a bearer-only gate never connects to a replay store.
  const dpop = policies.some((policy) => policy.dpop !== 'off')
    ? createDpopRuntime(config.dpop, { now, logger, redis: redisSettingsOf(config) })
    : undefined;
  // The Shared Signals transmitter's keys: only from the `jwks_uri` of its
  // `/.well-known/ssf-configuration` (SSF 1.0 §7.1), which must name it as `issuer`.
  const { transmitter, audience: ssfAudience, allowHttp: ssfHttp } = config.revocation.ssf;
  const transmitterFetching =
    transmitter === undefined || ssfAudience === undefined
      ? undefined
      : { issuer: transmitter, timeout: config.fetchTimeout, allowHttp: ssfHttp };
  const transmitterKeys =
    transmitterFetching &&
    createKeySet({
      ...config.jwks,
      ...transmitterFetching,
      resolveUri: createEndpointResolver(
        transmitterFetching,
        undefined,
        'jwks_uri',
        'ssf-configuration',
      ),
      now,
      onFetch(outcome, detail) {
        metrics.jwksFetch(transmitterFetching.issuer, outcome);
        if (outcome !== 'ok')
          logger.warn(
            { transmitter: transmitterFetching.issuer, outcome, detail },
            'SSF key set fetch failed',
          );
      },
    });
  const revocation = createRevocationRuntime(config, {
    keySets,
    transmitterKeys,
    metrics,
    logger,
    now,
    // Per sender key (`iss`, `kid`), not per address: spent only by forgeries under that key.
    // Made only with a receiver: a call limit preallocates 100,000 slots (1.5 MB of arrays).
    createSpendFailure: () =>
      createCallLimit(
        { rate: config.revocation.receiverRate, burst: config.revocation.receiverBurst },
        now,
      ),
  });
  // Minted values (minted/): after the revocation runtime, whose check purges a user's sets. A
  // `token-exchange` value goes to the token endpoint of the policy's first issuer.
  const mintedServed = policies.some((policy) => policy.mint)
    ? createMintedMetrics(metrics.registry)
    : undefined;
  const jwksSources: (() => readonly PublicJwk[])[] = [];
  const minted = new Map<string, Grant>();
  for (const { name, mint, issuers: named } of policies) {
    const first = named[0] === undefined ? undefined : config.issuers.get(named[0]);
    const context =
      first === undefined
        ? {}
        : {
            tokenEndpoint: createEndpointResolver(
              { issuer: first.issuer, timeout: config.fetchTimeout, allowHttp: first.allowHttp },
              undefined,
              'token_endpoint',
            ),
          };
    if (mint) {
      const grant = createMintedGrant({
        policy: name,
        entries: mint,
        context,
        revocation: revocation?.check,
        logger: logger.child({ policy: name }),
        onServe: mintedServed?.(name),
      });
      minted.set(name, grant);
      jwksSources.push(grant.publicJwks);
    }
  }
  const isReady = () =>
    [...keySets.values()].every((keySet) => keySet.isReady()) &&
    (dpop?.store.isReady() ?? true) &&
    (revocation?.isReady() ?? true);
  const decisionLog = createDecisionLog({
    logger,
    metrics,
    now,
    subjectKey: config.decisionLog.subjectKey,
    subject: config.decisionLog.subject,
    setName: secretSetName,
    // The receivers' throttle: at most one line a second per reason once a flood is on.
    throttle: createLogThrottle(now, 1),
  });

  /**
   * The decision under one configuration's policies and issuers, built whole before it is used:
   * a CloudFront grant per policy that has one, the minted grants made at start (a change of
   * `mint` needs a restart: config/reload-plan.ts).
   */
  function decisionFor(next: VerifierConfig, prepared: PreparedIssuers): Authorize {
    const grants = new Map<string, Grant>();
    for (const { name, cloudfront } of next.policies.values()) {
      const grant = minted.get(name);
      if (grant) grants.set(name, grant);
      else if (cloudfront)
        grants.set(name, createCloudFrontGrant(cloudfront, logger.child({ policy: name })));
    }
    return createAuthorizer({
      dpop,
      config: next,
      // Session claims are kept in the cache only when a receiver reads them.
      verifyToken: createTokenVerifier({
        config: next,
        verifiers: prepared.verifiers,
        cache,
        metrics,
        keepSession: !!revocation,
        keyEpoch: prepared.keyEpoch,
        onLookup: options.tracing?.noteTokenCache,
      }),
      logger,
      metrics,
      grants,
      // With a receiver on, NGINX may reuse an answer only within the revocation latency bound.
      edgeTtl: revocation?.edgeTtl ?? config.cache.edgeTtl,
      revocation: revocation?.check,
      now,
      decisionLog,
    });
  }

  // The one reference a reload swaps: every request reads the policies and issuers through it.
  /** The policies whose /verify requests carry a DPoP proof to check: read whole (transport.ts). */
  const dpopPolicies = (next: VerifierConfig): ReadonlySet<string> =>
    new Set([...next.policies.values()].filter((p) => p.dpop !== 'off').map((p) => p.name));
  let live = {
    decide: decisionFor(config, firstIssuers),
    config,
    generation: 1,
    dpopPolicies: dpopPolicies(config),
  };
  const version = { digest: options.configDigest ?? 'start', generation: 1 };
  metrics.configVersion(version.generation, version.digest);
  const decide: Authorize = (request) => live.decide(request);
  // With OTEL_* tracing on (main.ts), each decision is a SERVER span; without, no wrapper at all.
  // Lines logged while deciding a request that came with a traceparent carry its trace id.
  const inTrace = withLogTrace(decide);
  const authorize = options.tracing?.traceAuthorize(inTrace, metrics) ?? inTrace;
  const routes = createRoutes({
    authorize,
    admit: createCallLimit(config.callLimit, now),
    isEdge: config.edgeKeyFile === undefined ? undefined : createEdgeCheck(config.edgeKeyFile),
    isReady,
    metrics,
    metricsOnMain: config.metricsListen === undefined,
    // With OTEL_* on, each pushed token is a SERVER span and its Redis writes are its children.
    receivers:
      revocation && (options.tracing?.traceReceivers(revocation.receivers) ?? revocation.receivers),
    readinessNote: () => revocation?.note(),
    render: createRenderer({ resourceMetadata: config.resourceMetadataUrl }),
    // X-Original-* and DPoP are read for a request only when something reads them: a policy's
    // DPoP step, the decision log line (info), the span of a decision tracing records (not one
    // NGINX left unsampled: at 1 % the four header reads were about a fifth of what it cost).
    readsWhole: (policy, traceparent) =>
      logger.isLevelEnabled('info') ||
      (live.dpopPolicies.size > 0 && live.dpopPolicies.has(policy ?? DEFAULT_POLICY)) ||
      (options.tracing?.recordsDecision(traceparent) ?? false),
    // Gate-signed `jwt` values are checked downstream with these keys (served without a token).
    pages: new Map([[MINTED_JWKS_PATH, createMintedJwksPage(jwksSources)]]),
  });
  let transport: ReturnType<typeof createTransport> | undefined;
  let metricsListener: typeof transport;

  return {
    authorize,
    routes,
    cache,
    keySets: keySets as ReadonlyMap<string, KeySet>,
    metrics,
    /** Pushed revocation; undefined when no receiver is configured. */
    revocation,
    isReady,
    /** Loads every key set (failures leave the service unready, not dead) and starts refreshing. */
    async start(): Promise<void> {
      // Loaded beside the issuers' sets; its readiness is the receivers' (a SET waits for it).
      if (revocation !== undefined) void transmitterKeys?.start();
      revocation?.start();
      await Promise.all([...keySets.values()].map((keySet) => keySet.start()));
    },
    /** The live configuration's generation (1 at start, one more per applied reload) and digest. */
    get version(): { readonly generation: number; readonly digest: string } {
      return { ...version };
    },
    /**
     * Applies a reloaded configuration (already validated whole by loadConfig) in one swap, once
     * its new key sets have loaded; until then, and when it is refused, the running one answers.
     * Refused, with one line per problem, when it needs parts only a start builds.
     */
    async reload(next: VerifierConfig, digest: string): Promise<ReloadOutcome> {
      const problems = needsRestart(live.config, next, { dpop: !!dpop, revocation: !!revocation });
      if (problems.length > 0) return { applied: false, problems };
      const prepared = issuers.prepare(next);
      let nextDecide: Authorize;
      try {
        nextDecide = decisionFor(next, prepared);
      } catch (error) {
        prepared.discard();
        if (!(error instanceof TypeError)) throw error;
        return { applied: false, problems: [error.message] };
      }
      await prepared.start();
      live = {
        decide: nextDecide,
        config: next,
        generation: live.generation + 1,
        dpopPolicies: dpopPolicies(next),
      };
      const dropped = issuers.commit(prepared);
      version.generation = live.generation;
      version.digest = digest;
      metrics.configVersion(version.generation, digest);
      return { applied: true, generation: live.generation, dropped };
    },
    /**
     * Starts the HTTP transport (and the metrics listener when `metricsListen` is set); resolves
     * with the TCP ports (0 on a unix socket).
     */
    async listen(listen: Listen = config.listen, metricsListen = config.metricsListen) {
      transport = createTransport(routes);
      const port = await transport.listen(listen);
      if (metricsListen === undefined) return { port, metricsPort: undefined };
      // Its own port, so a scrape port can be opened to monitoring while /verify stays NGINX's.
      metricsListener = createTransport(routes.metricsOnly);
      return { port, metricsPort: await metricsListener.listen(metricsListen) };
    },
    /** Stops accepting, lets in-flight requests finish (up to `graceMs`), stops refreshing. */
    async stop(graceMs = 4000): Promise<void> {
      issuers.stop();
      transmitterKeys?.stop();
      await Promise.all([transport?.close(graceMs), metricsListener?.close(0)]);
      await dpop?.close();
      await revocation?.close();
    },
  };
}
