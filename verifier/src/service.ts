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
import type { Listen, VerifierConfig } from './config/model.js';
import type { Grant } from './decision/decision.js';
import { createEndpointResolver } from './token/discovery.js';
import { createDpopRuntime } from './dpop/index.js';
import { createJwtVerifier, type JwtVerifier } from './token/jwt-verifier.js';
import { createKeySet, type KeySet } from './token/key-set.js';
import type { Logger } from './log.js';
import { createMetrics } from './metrics.js';
import { createOpaqueVerifier, type OpaqueVerifier } from './token/opaque-verifier.js';
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

/** `now` is injectable for tests; the benchmark turns the process metrics off. */
export function createVerifierService(
  config: VerifierConfig,
  options: { logger: Logger; now?: Clock; defaultMetrics?: boolean; tracing?: Tracing },
) {
  const { logger } = options;
  const now = options.now ?? systemClock;
  const keySets = new Map<string, KeySet>();
  const cache = createTokenCache({
    ...config.cache,
    now,
    trustedUntilSeconds: (issuer) => keySets.get(issuer)?.trustedUntilSeconds(),
  });
  const metrics = createMetrics(cache, keySets, options.defaultMetrics);
  const verifiers = new Map<string, JwtVerifier | OpaqueVerifier>();
  // Step-up claims are read (and cached) only when some policy checks them.
  const authentication = [...config.policies.values()].some(
    (policy) => policy.acrValues ?? policy.amrValues ?? policy.maxAge,
  );

  for (const settings of config.issuers.values()) {
    const { issuer } = settings;
    if (settings.type !== 'jwt') {
      verifiers.set(issuer, createOpaqueVerifier(settings, now, { authentication }));
      continue;
    }
    const log = logger.child({ issuer });
    const fetching = { issuer, timeout: config.fetchTimeout, allowHttp: settings.allowHttp };
    const keySet = createKeySet({
      ...fetching,
      ...config.jwks,
      resolveUri: createEndpointResolver(fetching, settings.jwksUri, 'jwks_uri'),
      now,
      onFetch(outcome, detail) {
        metrics.jwksFetch(issuer, outcome);
        if (outcome === 'ok') log.debug('key set loaded');
        else log.warn({ outcome, detail }, 'key set fetch failed; keeping the last good set');
      },
      onKeysRemoved(kids) {
        const dropped = cache.dropKeys(issuer, kids);
        log.info({ kids: [...kids], dropped }, 'keys left the key set; cached decisions dropped');
      },
    });
    keySets.set(issuer, keySet);
    verifiers.set(issuer, createJwtVerifier(settings, keySet, now, { authentication }));
  }

  const policies = [...config.policies.values()];
  const grants = new Map<string, Grant>();
  for (const { name, cloudfront } of policies)
    if (cloudfront)
      grants.set(name, createCloudFrontGrant(cloudfront, logger.child({ policy: name })));

  // Only built when a policy reads DPoP, so a bearer-only gate never connects to a replay store.
  const dpop = policies.some((policy) => policy.dpop !== 'off')
    ? createDpopRuntime(config.dpop, { now, logger, redis: redisSettingsOf(config) })
    : undefined;
  const revocation = createRevocationRuntime(config, {
    keySets,
    metrics,
    logger,
    now,
    // A bucket of its own, apart from /verify's: a sender pushes a few events a second.
    admitPush: createCallLimit(
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
  for (const { name, mint, issuers } of policies) {
    const first = issuers[0] === undefined ? undefined : config.issuers.get(issuers[0]);
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
      grants.set(name, grant);
      jwksSources.push(grant.publicJwks);
    }
  }
  const isReady = () =>
    [...keySets.values()].every((keySet) => keySet.isReady()) &&
    (dpop?.store.isReady() ?? true) &&
    (revocation?.isReady() ?? true);
  const decide = createAuthorizer({
    dpop,
    config,
    // Session claims are kept in the cache only when a receiver reads them.
    verifyToken: createTokenVerifier({
      config,
      verifiers,
      cache,
      metrics,
      keepSession: !!revocation,
      onLookup: options.tracing?.noteTokenCache,
    }),
    logger,
    metrics,
    grants,
    // With a receiver on, NGINX may reuse an answer only within the revocation latency bound.
    edgeTtl: revocation?.edgeTtl ?? config.cache.edgeTtl,
    revocation: revocation?.check,
    now,
    decisionLog: createDecisionLog({
      logger,
      metrics,
      now,
      subjectKey: config.decisionLog.subjectKey,
      subject: config.decisionLog.subject,
      setName: secretSetName,
      // The receivers' throttle: at most one line a second per reason once a flood is on.
      throttle: createLogThrottle(now, 1),
    }),
  });
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
    receivers: revocation?.receivers,
    readinessNote: () => revocation?.note(),
    render: createRenderer({ resourceMetadata: config.resourceMetadataUrl }),
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
      revocation?.start();
      await Promise.all([...keySets.values()].map((keySet) => keySet.start()));
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
      for (const keySet of keySets.values()) keySet.stop();
      await Promise.all([transport?.close(graceMs), metricsListener?.close(0)]);
      await dpop?.close();
      await revocation?.close();
    },
  };
}
