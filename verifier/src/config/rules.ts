// The rules between settings, the ones a schema cannot say: written by hand, and run in the
// schema's one pass as checks on the object that holds what they read, so `--check-config` names
// every problem, a field's or a rule's, at once. A rule runs whenever the settings it reads are
// valid on their own, whatever else is wrong.
import { z } from 'zod';
import { onLoopback, parseRedisUrl } from '../redis/url.js';
import { checkStepUpIssuer } from './presets.js';
import { insecureUrlProblem, list, type Listen } from './values.js';

/**
 * Reports a problem at `path` (below the object the rule checks). `{0}`, `{1}`… in the message
 * stand for the settings `names` lists, paths from the same object, which the loader names as the
 * operator wrote them (`VERIFIER_JWKS_REFRESH`, `config.jwks.refresh`).
 */
export type Report = (
  path: string | readonly (string | number)[],
  message: string,
  names?: readonly string[],
) => void;

/** A rule over an object, run unless a problem lies at, above or below a path it `reads`. */
export function rule<T>(reads: readonly string[], check: (value: T, report: Report) => void) {
  const touches = (path: readonly PropertyKey[]) => {
    const at = path.map(String).join('.');
    return reads.some(
      (read) => read === at || read.startsWith(`${at}.`) || at.startsWith(`${read}.`),
    );
  };
  return z.superRefine<T>(
    (value, ctx) =>
      check(value, (path, message, names = []) =>
        ctx.addIssue({
          code: 'custom',
          path: typeof path === 'string' ? path.split('.') : [...path],
          message,
          params: { names },
        }),
      ),
    { when: ({ issues }) => !issues.some((issue) => touches(issue.path ?? [])) },
  );
}

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const PLAIN_REDIS =
  'plain redis to a host that is not loopback; use a rediss:// form, or opt in with "redis.allowPlaintext": true (VERIFIER_REDIS_ALLOW_PLAINTEXT=true)';
/** Proofs' `jti`s, revocations and the stores' password would cross the network in clear. */
const inClear = (store: unknown) => {
  const target = typeof store === 'string' && store !== 'memory' ? parseRedisUrl(store) : undefined;
  return typeof target === 'object' && !target.tls && !onLoopback(target);
};

/** The rules of the top-level settings (the same in the file and in the environment). */
export const rootRules = [
  rule<{ jwks: { refresh: number; maxStale: number } }>(['jwks'], ({ jwks }, report) => {
    if (jwks.maxStale < jwks.refresh)
      report('jwks.maxStale', 'must be at least {0}', ['jwks.refresh']);
  }),
  rule<{ listen: Listen; metricsListen?: Listen }>(
    ['listen', 'metricsListen'],
    ({ listen, metricsListen }, report) => {
      const where = (at: Listen) => (at.kind === 'unix' ? at.path : `${at.host}:${at.port}`);
      if (metricsListen !== undefined && where(metricsListen) === where(listen))
        report('metricsListen', 'must differ from {0}', ['listen']);
    },
  ),
  rule<{ redis: { url?: string; allowPlaintext: boolean } }>(['redis'], ({ redis }, report) => {
    if (!redis.allowPlaintext && inClear(redis.url)) report('redis.url', PLAIN_REDIS);
  }),
];

/** Every `iss` the issuers declare (valid or not, each reported once by its own check) and its `type`. */
function declaredIssuers(issuers: unknown, report?: Report) {
  const declared = new Map<string, unknown>();
  (Array.isArray(issuers) ? issuers : []).forEach((issuer: unknown, index) => {
    if (!isObject(issuer) || typeof issuer.issuer !== 'string') return;
    if (declared.has(issuer.issuer))
      report?.(['issuers', index], `duplicate issuer "${issuer.issuer}"`);
    else declared.set(issuer.issuer, issuer.type ?? 'jwt');
  });
  return declared;
}
const policyIssuers = list('issuer');
type StepUpPolicy = Parameters<typeof checkStepUpIssuer>[1] & {
  readonly issuers: readonly string[];
};

/** The rules between the document's sections: what policies and the SSF receiver name is declared. */
export const documentRules = [
  rule<{ issuers: unknown }>(['issuers'], ({ issuers }, report) => {
    declaredIssuers(issuers, report);
  }),
  rule<{ issuers: unknown; policies: unknown }>(['issuers', 'policies'], (document, report) => {
    const declared = declaredIssuers(document.issuers);
    const named = isObject(document.policies) ? document.policies : {};
    for (const [name, policy] of Object.entries(named)) {
      const listed = policyIssuers.safeParse(isObject(policy) ? policy.issuers : undefined);
      const at = ['policies', name, 'issuers'];
      for (const iss of (listed.data ?? []).filter((iss) => !declared.has(iss)))
        report(at, `"${iss}" is not a configured issuer`);
      // An opaque token does not say who issued it, so a policy can only ask one opaque issuer.
      if ((listed.data ?? []).filter((iss) => (declared.get(iss) ?? 'jwt') !== 'jwt').length > 1)
        report(at, 'at most one introspection/tokeninfo issuer per policy');
    }
  }),
  // An address is matched against the `email` claim of this issuer's JWTs only.
  rule<{ issuers: unknown; revocation: { ssf: { emailIssuer?: string } } }>(
    ['issuers', 'revocation.ssf.emailIssuer'],
    ({ issuers, revocation }, report) => {
      const { emailIssuer } = revocation.ssf;
      if (emailIssuer !== undefined && declaredIssuers(issuers).get(emailIssuer) !== 'jwt')
        report('revocation.ssf.emailIssuer', 'must be a configured issuer of JWT access tokens');
    },
  ),
];

/**
 * A policy's step-up requirement one of its issuers' access tokens cannot carry (the claim `off`,
 * by its preset or as written) would refuse every token: said at start. The document holds the
 * issuers and policies as written, so each is read here with its own schema (preset included);
 * one that does not read is reported by its own check.
 */
export function stepUpRule(issuerSchema: z.ZodType, policySchema: z.ZodType) {
  const loaded = <T>(schema: z.ZodType, raw: unknown): T[] => {
    const read = schema.safeParse(raw);
    return read.success ? [read.data as T] : [];
  };
  return rule<{ issuers: unknown; policies: unknown }>(
    ['issuers', 'policies'],
    (document, report) => {
      const issuers = (Array.isArray(document.issuers) ? document.issuers : []).flatMap((raw) =>
        loaded<Parameters<typeof checkStepUpIssuer>[0]>(issuerSchema, raw),
      );
      const byName = new Map(issuers.map((issuer) => [issuer.issuer, issuer]));
      const named = isObject(document.policies) ? document.policies : {};
      for (const [name, raw] of Object.entries(named))
        for (const policy of loaded<StepUpPolicy>(policySchema, raw))
          for (const issuer of policy.issuers.flatMap((iss) => byName.get(iss) ?? []))
            checkStepUpIssuer(issuer, policy, (field, message) =>
              report(['policies', name, field], message),
            );
    },
  );
}

/**
 * The URL an issuer's verifier fetches first (`field` when given, else the issuer's discovery
 * document) is never plain http off loopback unless the issuer opted in.
 */
export function firstFetchRule<F extends 'jwksUri' | 'endpoint'>(field: F) {
  return rule<{ issuer: string; allowHttp: boolean } & { readonly [K in F]?: string }>(
    [field, 'issuer', 'allowHttp'],
    (issuer, report) => {
      const first = issuer[field];
      const problem = insecureUrlProblem(first ?? issuer.issuer, issuer.allowHttp);
      if (problem !== undefined) report(first === undefined ? 'issuer' : field, problem);
    },
  );
}
