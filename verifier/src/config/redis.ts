// The `redis` section: the one Redis (or Valkey) both shared stores use (the DPoP replay store and
// the revocation store) and how they reach it. The names the stores' own settings had before it are
// no longer read: each is a start-time problem naming the setting that replaced it (load.ts, env.ts).
import { z } from 'zod';
import { parseRedisUrl } from '../redis/url.js';
import { Deferred, env, flag, positive, says, secret, section, text } from './values.js';

const STORE_FORMS =
  '`redis://host:6379`, `rediss://…` (TLS), `redis+sentinel://h1:26379,h2:26379/MASTER`, `redis+cluster://h1:6379,h2:6379` (and their `rediss+` forms; docs/deploy.md)';
/** A Redis URL in one of the forms of redis/url.ts; `memory` too where `inProcess` allows it. */
const storeUrl = (inProcess: boolean) =>
  text.superRefine((value, ctx) => {
    const target = inProcess && value === 'memory' ? undefined : parseRedisUrl(value);
    if (typeof target === 'string') ctx.addIssue(target);
  });
/** How many replicas a write waits for: 0 (none) to 16, as a number or a string of digits. */
const replicasSaid = says('a number of replicas from 0 to 16');
const replicaCount = z
  .union(
    [
      z.number(replicasSaid).int(replicasSaid).min(0, replicasSaid).max(16, replicasSaid),
      z.string(replicasSaid).regex(/^(?:\d|1[0-6])$/, replicasSaid),
    ],
    replicasSaid,
  )
  .transform(Number);
/** An absolute path to a file read once at start. */
const pemFile = z
  .string(says('an absolute path'))
  .regex(/^\//, 'expected an absolute path')
  .transform((path) => new Deferred((io, fail) => io.read(path, fail), path));

/** How both shared stores reach their Redis; unset `url`: each store is held in process. */
export const redisSection = section({
  url: env('VERIFIER_REDIS_URL', storeUrl(false).optional()).describe(
    `The Redis every replica shares, for both shared stores: the DPoP replay store (proofs' \`jti\`s) and the revocation store (revocation watermarks and the \`jti\`s of received logout tokens and SETs). ${STORE_FORMS}; plain forms only to loopback unless \`redis.allowPlaintext\`. A store connects only when something uses it (a policy with \`dpop\`, a revocation receiver). When it does not answer, DPoP \`required\` policies refuse (401) and \`allowed\` ones check replays per process. Unset: each store is held in process, which serves one replica only.`,
  ),
  username: env('VERIFIER_REDIS_USERNAME', text.optional()).describe(
    'ACL user name (Redis 6+, Valkey), instead of one in the URL.',
  ),
  password: env('VERIFIER_REDIS_PASSWORD', secret().optional()).describe(
    'Password (`AUTH`), instead of one inside the URL (which it wins over): a string, `{ "file": "/path" }` (a mounted Kubernetes Secret; one trailing newline dropped) or `{ "env": "NAME" }` (a variable outside the `VERIFIER_` prefix), read once at start.',
  ),
  sentinelPassword: env('VERIFIER_REDIS_SENTINEL_PASSWORD', secret().optional()).describe(
    "The sentinels' own password (`requirepass` in sentinel.conf), like `password`; unset, the sentinels are asked without `AUTH`.",
  ),
  caFile: env('VERIFIER_REDIS_CA_FILE', pemFile.optional()).describe(
    "PEM file of the CAs that sign the servers' certificates for the `rediss` forms, read once at start; unset, the system's CAs.",
  ),
  allowPlaintext: env('VERIFIER_REDIS_ALLOW_PLAINTEXT', flag.prefault(false)).describe(
    'Allow a plain (`redis`, `redis+sentinel`, `redis+cluster`) URL with a host that is not loopback (`localhost`, 127.0.0.0/8, `[::1]`). Off: such a URL is refused at start; use the `rediss` forms (TLS).',
  ),
  waitReplicas: env('VERIFIER_REDIS_WAIT_REPLICAS', replicaCount.optional()).describe(
    'Replicas that must hold each write (revocation, logout `jti`, DPoP proof `jti`) before it counts (`WAIT`); fewer within `waitTimeout` and the write fails as if the store were unreachable. Unset: 1 with `redis+sentinel`, 0 (no wait) otherwise. docs/revocation.md, "Failover", says what it buys.',
  ),
  waitTimeout: env('VERIFIER_REDIS_WAIT_TIMEOUT', positive.prefault('200ms')).describe(
    'How long a write waits for `waitReplicas`.',
  ),
});

/** Each removed name (a document path) and the `redis` setting that replaced it. */
export const REMOVED_NAMES = {
  'dpop.replayStore': 'redis.url',
  'dpop.replayPassword': 'redis.password',
  'dpop.replayAllowPlaintext': 'redis.allowPlaintext',
  'revocation.store': 'redis.url',
} as const;

/** The same as variables: each removed VERIFIER_* name and the variable that replaced it. */
export const REMOVED_VARIABLES: Readonly<Record<string, string>> = {
  VERIFIER_DPOP_REPLAY_STORE: 'VERIFIER_REDIS_URL',
  VERIFIER_DPOP_REPLAY_PASSWORD: 'VERIFIER_REDIS_PASSWORD',
  VERIFIER_DPOP_REPLAY_ALLOW_PLAINTEXT: 'VERIFIER_REDIS_ALLOW_PLAINTEXT',
  VERIFIER_REVOCATION_STORE: 'VERIFIER_REDIS_URL',
};

/**
 * The document without the removed names it holds, and one problem per name naming the setting
 * that replaced it (instead of "unknown key"), never its value.
 */
export function withoutRemovedNames(
  document: Record<string, unknown>,
  label: (path: string) => string,
): { document: Record<string, unknown>; problems: string[] } {
  const problems: string[] = [];
  const kept = { ...document };
  for (const [removed, now] of Object.entries(REMOVED_NAMES)) {
    const [section = '', key = ''] = removed.split('.');
    const holder = kept[section];
    if (typeof holder !== 'object' || holder === null || !(key in holder)) continue;
    problems.push(`${label(removed)}: removed; use ${label(now)} (it serves both stores)`);
    kept[section] = Object.fromEntries(Object.entries(holder).filter(([name]) => name !== key));
  }
  return { document: kept, problems };
}
