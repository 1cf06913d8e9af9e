// Reads VERIFIER_* variables (and the optional JSON file named by VERIFIER_CONFIG) once, at start,
// into a frozen VerifierConfig. Every problem is collected and reported in one ConfigError.
import { readFileSync } from 'node:fs';
import type {
  DpopConfig,
  IssuerConfig,
  Listen,
  PolicyConfig,
  TransportChoice,
  VerifierConfig,
} from './config-types.js';
import {
  parseAlgorithms,
  parseBytes,
  parseCount,
  parseDpopMode,
  parseDuration,
  parseList,
  parseUrl,
  type Problems,
} from './config-values.js';
import { parseConfigFile } from './config-file.js';

/** Thrown at start when the configuration is unusable; the message lists every problem. */
export class ConfigError extends TypeError {
  override readonly name = 'ConfigError';
  constructor(readonly problems: readonly string[]) {
    super(`invalid verifier configuration:\n  - ${problems.join('\n  - ')}`);
  }
}

/** Every variable the verifier reads, with its default (documented in verifier/README.md). */
export const ENV_DEFAULTS = {
  VERIFIER_CONFIG: '',
  VERIFIER_ISSUER: '',
  VERIFIER_AUDIENCE: '',
  VERIFIER_JWKS_URI: '',
  VERIFIER_ALGORITHMS: 'RS256,ES256,PS256,EdDSA',
  VERIFIER_CLOCK_TOLERANCE: '30s',
  VERIFIER_REQUIRE_TYP: '',
  VERIFIER_REQUIRED_SCOPES: '',
  VERIFIER_CLIENT_CLAIM: 'azp,client_id,cid',
  VERIFIER_LISTEN: '127.0.0.1:8090',
  VERIFIER_TRANSPORT: 'auto',
  VERIFIER_LOG_LEVEL: 'info',
  VERIFIER_CACHE_MAX_ENTRIES: '100000',
  VERIFIER_CACHE_MAX_BYTES: '64m',
  VERIFIER_CACHE_MAX_TTL: '5m',
  VERIFIER_JWKS_REFRESH: '10m',
  VERIFIER_JWKS_COOLDOWN: '30s',
  VERIFIER_JWKS_MAX_STALE: '24h',
  VERIFIER_FETCH_TIMEOUT: '5s',
  VERIFIER_DPOP: 'off',
  VERIFIER_DPOP_ALGORITHMS: 'ES256,ES384,PS256,RS256,EdDSA',
  VERIFIER_DPOP_IAT_WINDOW: '60s',
  VERIFIER_DPOP_REPLAY_STORE: 'memory',
  VERIFIER_DPOP_REPLAY_MAX_ENTRIES: '1000000',
  VERIFIER_DPOP_NONCE_KEY: '',
} as const;

type EnvName = keyof typeof ENV_DEFAULTS;
const LOG_LEVELS = new Set(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);
const TRANSPORTS = new Set<TransportChoice>(['auto', 'uws', 'node']);

export type FileReader = (path: string) => string;

/**
 * Builds the configuration from the environment. Single-issuer mode (VERIFIER_ISSUER) defines one
 * JWT issuer and one policy named `default`; file mode (VERIFIER_CONFIG) defines issuers and
 * named policies in JSON. The two are exclusive so no setting is silently ignored.
 */
export function loadConfig(
  env: NodeJS.ProcessEnv,
  readFile: FileReader = (path) => readFileSync(path, 'utf8'),
): VerifierConfig {
  const problems: Problems = [];
  for (const name of Object.keys(env)) {
    if (name.startsWith('VERIFIER_') && !(name in ENV_DEFAULTS)) {
      problems.push(`${name}: unknown variable (known: ${Object.keys(ENV_DEFAULTS).join(', ')})`);
    }
  }
  const read = (name: EnvName): string => {
    const value = env[name];
    return value === undefined || value.trim() === '' ? ENV_DEFAULTS[name] : value.trim();
  };
  const given = (name: EnvName): boolean => (env[name] ?? '').trim() !== '';

  const listen = parseListen(read('VERIFIER_LISTEN'), problems);
  const transport = read('VERIFIER_TRANSPORT') as TransportChoice;
  if (!TRANSPORTS.has(transport)) {
    problems.push(`VERIFIER_TRANSPORT: expected auto, uws or node, got "${transport}"`);
  }
  const logLevel = read('VERIFIER_LOG_LEVEL');
  if (!LOG_LEVELS.has(logLevel)) {
    problems.push(
      `VERIFIER_LOG_LEVEL: expected one of ${[...LOG_LEVELS].join(', ')}, got "${logLevel}"`,
    );
  }
  const cache = {
    maxEntries: parseCount(
      'VERIFIER_CACHE_MAX_ENTRIES',
      read('VERIFIER_CACHE_MAX_ENTRIES'),
      problems,
    ),
    maxBytes: parseBytes('VERIFIER_CACHE_MAX_BYTES', read('VERIFIER_CACHE_MAX_BYTES'), problems),
    maxTtl: parseDuration('VERIFIER_CACHE_MAX_TTL', read('VERIFIER_CACHE_MAX_TTL'), problems),
  };
  const jwks = {
    refresh: parseDuration('VERIFIER_JWKS_REFRESH', read('VERIFIER_JWKS_REFRESH'), problems),
    cooldown: parseDuration('VERIFIER_JWKS_COOLDOWN', read('VERIFIER_JWKS_COOLDOWN'), problems),
    maxStale: parseDuration('VERIFIER_JWKS_MAX_STALE', read('VERIFIER_JWKS_MAX_STALE'), problems),
  };
  if (jwks.refresh < 1) problems.push('VERIFIER_JWKS_REFRESH: must be at least 1s');
  if (jwks.maxStale < jwks.refresh)
    problems.push('VERIFIER_JWKS_MAX_STALE: must be at least VERIFIER_JWKS_REFRESH');
  const fetchTimeout = parseDuration(
    'VERIFIER_FETCH_TIMEOUT',
    read('VERIFIER_FETCH_TIMEOUT'),
    problems,
  );
  if (fetchTimeout <= 0) problems.push('VERIFIER_FETCH_TIMEOUT: must be greater than 0');

  const dpop = parseDpopSettings(read, problems);

  const clientClaims = parseList(read('VERIFIER_CLIENT_CLAIM'));
  let issuers = new Map<string, IssuerConfig>();
  let policies = new Map<string, PolicyConfig>();
  const singleIssuerNames: EnvName[] = [
    'VERIFIER_ISSUER',
    'VERIFIER_AUDIENCE',
    'VERIFIER_JWKS_URI',
    'VERIFIER_ALGORITHMS',
    'VERIFIER_CLOCK_TOLERANCE',
    'VERIFIER_REQUIRE_TYP',
    'VERIFIER_REQUIRED_SCOPES',
    'VERIFIER_DPOP',
  ];
  if (given('VERIFIER_CONFIG')) {
    for (const name of singleIssuerNames.filter(given)) {
      problems.push(`${name}: not used together with VERIFIER_CONFIG (put it in the file)`);
    }
    const path = read('VERIFIER_CONFIG');
    let text: string | undefined;
    try {
      text = readFile(path);
    } catch (error) {
      problems.push(`VERIFIER_CONFIG: cannot read "${path}" (${(error as Error).message})`);
    }
    if (text !== undefined) {
      ({ issuers, policies } = parseConfigFile(text, { clientClaims, fetchTimeout }, problems));
    }
  } else if (!given('VERIFIER_ISSUER')) {
    problems.push('VERIFIER_ISSUER or VERIFIER_CONFIG: one of them is required');
  } else {
    const issuer = read('VERIFIER_ISSUER');
    parseUrl('VERIFIER_ISSUER', issuer, problems);
    if (!given('VERIFIER_AUDIENCE'))
      problems.push('VERIFIER_AUDIENCE: required with VERIFIER_ISSUER');
    const jwksUri = given('VERIFIER_JWKS_URI')
      ? parseUrl('VERIFIER_JWKS_URI', read('VERIFIER_JWKS_URI'), problems)
      : undefined;
    issuers.set(issuer, {
      type: 'jwt',
      issuer,
      audience: read('VERIFIER_AUDIENCE'),
      jwksUri,
      algorithms: parseAlgorithms('VERIFIER_ALGORITHMS', read('VERIFIER_ALGORITHMS'), problems),
      clockTolerance: parseDuration(
        'VERIFIER_CLOCK_TOLERANCE',
        read('VERIFIER_CLOCK_TOLERANCE'),
        problems,
      ),
      requireTyp: given('VERIFIER_REQUIRE_TYP') ? read('VERIFIER_REQUIRE_TYP') : undefined,
      clientClaims,
    });
    policies.set('default', {
      name: 'default',
      issuers: [issuer],
      scopes: parseList(read('VERIFIER_REQUIRED_SCOPES')),
      cloudfront: undefined,
      dpop: parseDpopMode('VERIFIER_DPOP', read('VERIFIER_DPOP'), problems),
    });
  }
  if (clientClaims.length === 0)
    problems.push('VERIFIER_CLIENT_CLAIM: at least one claim name is required');

  if (problems.length > 0) throw new ConfigError(problems);
  return deepFreeze({
    listen,
    transport,
    logLevel,
    issuers,
    policies,
    cache,
    jwks,
    fetchTimeout,
    dpop,
  });
}

/** DPoP settings shared by every policy (docs/configuration.md, "DPoP"). */
function parseDpopSettings(read: (name: EnvName) => string, problems: Problems): DpopConfig {
  const iatWindow = parseDuration(
    'VERIFIER_DPOP_IAT_WINDOW',
    read('VERIFIER_DPOP_IAT_WINDOW'),
    problems,
  );
  if (iatWindow < 1 || iatWindow > 600)
    problems.push('VERIFIER_DPOP_IAT_WINDOW: must be between 1s and 10m');
  const replayStore = read('VERIFIER_DPOP_REPLAY_STORE');
  if (replayStore !== 'memory' && !/^rediss?:\/\/[^\s]+$/.test(replayStore))
    problems.push('VERIFIER_DPOP_REPLAY_STORE: expected memory or a redis:// / rediss:// URL');
  const nonceKey = read('VERIFIER_DPOP_NONCE_KEY');
  if (nonceKey !== '' && Buffer.byteLength(nonceKey) < 32)
    problems.push('VERIFIER_DPOP_NONCE_KEY: must be at least 32 bytes (or empty for no nonces)');
  return {
    algorithms: parseAlgorithms(
      'VERIFIER_DPOP_ALGORITHMS',
      read('VERIFIER_DPOP_ALGORITHMS'),
      problems,
    ),
    iatWindow,
    replayStore,
    replayMaxEntries: parseCount(
      'VERIFIER_DPOP_REPLAY_MAX_ENTRIES',
      read('VERIFIER_DPOP_REPLAY_MAX_ENTRIES'),
      problems,
    ),
    nonceKey: nonceKey === '' ? undefined : nonceKey,
  };
}

/** `host:port`, `[v6]:port`, `:port` (loopback) or `unix:/path/to.sock`. */
export function parseListen(raw: string, problems: Problems): Listen {
  if (raw.startsWith('unix:')) {
    const path = raw.slice('unix:'.length);
    if (!path.startsWith('/'))
      problems.push(`VERIFIER_LISTEN: unix socket path must be absolute, got "${path}"`);
    return { kind: 'unix', path };
  }
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(raw);
  const port = Number(match?.[3]);
  if (!match || port < 1 || port > 65535) {
    problems.push(`VERIFIER_LISTEN: expected host:port or unix:/path, got "${raw}"`);
    return { kind: 'tcp', host: '127.0.0.1', port: 8090 };
  }
  return { kind: 'tcp', host: match[1] ?? (match[2] || '127.0.0.1'), port };
}

function deepFreeze<T>(value: T): T {
  if (value instanceof Map) {
    for (const item of value.values()) deepFreeze(item);
    // A frozen Map still has set(): hide the mutators so the object really is read-only.
    for (const method of ['set', 'delete', 'clear'] as const) {
      Object.defineProperty(value, method, {
        value: () => {
          throw new TypeError('configuration is read-only');
        },
      });
    }
  } else if (value !== null && typeof value === 'object') {
    for (const item of Object.values(value)) deepFreeze(item);
  }
  return Object.freeze(value);
}
