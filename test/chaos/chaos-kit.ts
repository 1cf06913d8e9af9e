// What every fault scenario shares: the stack under test, its timings (full, quick or test-fast),
// verdict rows, a steady load of valid requests plus a probe load of invalid ones, and readers for
// the verifier's /metrics and the processes' resident memory.
import { createPrivateKey, generateKeyPairSync, randomUUID, sign } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { AttackStack } from '../attacks/attack-stack.js';
import { startLoad, type Load, type LoadSummary } from './load.js';

export interface Timing {
  /** Seconds of load before and after a fault. */
  readonly settle: number;
  /** Seconds the verifier stays dead. */
  readonly verifierGap: number;
  /** Seconds the IdP stays stopped. */
  readonly idpOutage: number;
  /** Seconds of random-kid flood. */
  readonly kidFlood: number;
  /** Distinct tokens pushed through the decision cache, as a multiple of its entry bound. */
  readonly floodFactor: number;
  readonly soakSeconds: number;
  /** Steady-load workers. */
  readonly concurrency: number;
}

/** Verifier settings the scenarios rely on (small bounds so a flood fits in seconds). */
export function chaosVerifierEnv(cacheMaxEntries: number): Record<string, string> {
  return {
    VERIFIER_CACHE_MAX_ENTRIES: String(cacheMaxEntries),
    VERIFIER_CACHE_MAX_BYTES: String(CACHE_MAX_BYTES),
    VERIFIER_JWKS_COOLDOWN: `${JWKS_COOLDOWN_S}s`,
    VERIFIER_JWKS_REFRESH: `${JWKS_REFRESH_S}s`,
    // Denials are logged at info: a flood would write one line per request.
    VERIFIER_LOG_LEVEL: 'warn',
    // The scenarios measure the verifier itself (its cache's hit rate and bounds, key fetches,
    // restarts); NGINX's edge decision cache would answer most requests before they get there.
    // It has its own suite (test/attacks/edge-cache.test.ts).
    VERIFIER_EDGE_CACHE_TTL: '0',
  };
}

/** NGINX for the chaos scenarios: the edge decision cache off, as chaosVerifierEnv explains. */
export const CHAOS_NGINX_ENV: Readonly<Record<string, string>> = Object.freeze({
  SG_EDGE_CACHE: 'off',
});
export const CACHE_MAX_BYTES = 2 * 1024 * 1024;
export const JWKS_COOLDOWN_S = 5;
export const JWKS_REFRESH_S = 10;

export interface Verdict {
  readonly scenario: string;
  readonly pass: boolean;
  /** Measured figures, one short phrase each. */
  readonly figures: readonly string[];
}

export interface ChaosContext {
  readonly gate: AttackStack;
  readonly timing: Timing;
  /** The verifier's VERIFIER_CACHE_MAX_ENTRIES in this stack. */
  readonly cacheMaxEntries: number;
  readonly log: (line: string) => void;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Tokens for the steady load: fresh from the real token endpoint, used round-robin. */
export async function validTokens(gate: AttackStack, count: number): Promise<string[]> {
  const tokens: string[] = [];
  for (let i = 0; i < count; i += 20) {
    const batch = Array.from({ length: Math.min(20, count - i) }, () => gate.stack.mintToken());
    tokens.push(...(await Promise.all(batch)));
  }
  for (const token of tokens.slice(0, 50)) gate.watch.recordToken(token);
  return tokens;
}

/** Valid-token load on /secret; every non-200 body goes to the leak watch (deduplicated). */
export function validLoad(ctx: ChaosContext, tokens: () => string, name = 'valid'): Load {
  const seen = new Set<string>();
  return startLoad({
    name,
    url: ctx.gate.stack.urls.secret,
    concurrency: ctx.timing.concurrency,
    headers: () => ({ authorization: `Bearer ${tokens()}` }),
    secretValues: ctx.gate.canaries.values,
    onResponse: (status, body) => {
      const key = `${status} ${body}`;
      if (status === 200 || seen.has(key)) return;
      seen.add(key);
      ctx.gate.watch.recordResponse({ label: `${name} load`, status, body, earned: false });
    },
  });
}

/** Invalid tokens (garbage, foreign-signed, expired-looking) that must never get a secret. */
export function probeLoad(ctx: ChaosContext): Load {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const issuer = ctx.gate.stack.urls.issuer;
  const forged = forgeToken(
    privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
    issuer,
    'rs256-forged',
  );
  const probes = ['Bearer garbage', `Bearer ${forged}`, 'Basic YTpi', ''];
  let i = 0;
  const seen = new Set<string>();
  return startLoad({
    name: 'invalid',
    url: ctx.gate.stack.urls.secret,
    concurrency: 2,
    headers: (): Record<string, string> => {
      const value = probes[i++ % probes.length]!;
      return value ? { authorization: value } : {};
    },
    secretValues: ctx.gate.canaries.values,
    onResponse: (status, body) => {
      const key = `${status} ${body}`;
      if (seen.has(key)) return;
      seen.add(key);
      ctx.gate.watch.recordResponse({ label: 'invalid-token probe', status, body, earned: false });
    },
  });
}

/** An RS256 token for `issuer` signed by a key the issuer never published, under `kid`. */
export function forgeToken(pkcs8Pem: string, issuer: string, kid: string): string {
  const b64u = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const now = Math.floor(Date.now() / 1000);
  const input = `${b64u({ alg: 'RS256', typ: 'at+jwt', kid })}.${b64u({ iss: issuer, aud: 'secret-gate-api', sub: 'x', scope: 'secrets:read', exp: now + 600, jti: randomUUID() })}`;
  return `${input}.${sign('sha256', Buffer.from(input), createPrivateKey(pkcs8Pem)).toString('base64url')}`;
}

/** Non-200 answers of a valid load: `conn-err`/`503`/… counts, or '' when there were none. */
export function failures(summary: LoadSummary): number {
  return summary.total - (summary.byStatus['200'] ?? 0);
}

/** Verifier metrics by series name (labels kept in the key), from its /metrics endpoint. */
export async function verifierMetrics(gate: AttackStack): Promise<Map<string, number>> {
  const text = await (await fetch(`${gate.stack.urls.verifier}/metrics`)).text();
  const values = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue;
    const at = line.lastIndexOf(' ');
    values.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return values;
}

/** Sum of every series whose key starts with `prefix` (e.g. all label sets of one counter). */
export function sumSeries(metrics: Map<string, number>, prefix: string): number {
  let sum = 0;
  for (const [key, value] of metrics)
    if (key === prefix || key.startsWith(`${prefix}{`)) sum += value;
  return sum;
}

/** Resident set size of a process and all its children (NGINX master + workers), in bytes. */
export function treeRss(pid: number): number {
  let total = 0;
  const visit = (p: number) => {
    try {
      const status = readFileSync(`/proc/${p}/status`, 'utf8');
      total += Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) * 1024;
      const children = readFileSync(`/proc/${p}/task/${p}/children`, 'utf8').trim();
      for (const child of children ? children.split(/\s+/) : []) visit(Number(child));
    } catch {
      // The process is gone.
    }
  };
  visit(pid);
  return total;
}

export const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
