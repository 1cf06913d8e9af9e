// The minted-values grant: on an allow of a policy with `mint`, the caller's minted values (cached,
// minted-cache.ts) as one `X-Auth-Minted` pair, which verify-answer.ts writes into `X-Auth-Set`
// after the set's name, and NGINX merges into the static set's body
// (nginx/njs/minted-set.js); the static values never come here. A value that cannot be minted
// refuses the request (no half-filled set): verify-answer.ts renders the reason for NGINX.
// Each value actually minted is a traced step (`mint <kind>`); a set served from the cache is not.
import { decodeJwt } from 'jose';
import type { EpochSeconds } from '../clock.js';
import type { MintSection } from '../config/mint.js';
import type { Grant, GrantCaller, RevocationCheck } from '../decision/decision.js';
import { VerifyError } from '../errors.js';
import type { Logger } from '../log.js';
import { traceWork, type TracedWork } from '../tracing/work-channel.js';
import { createMintedCache, type MintedCacheOptions, type MintedSet } from './minted-cache.js';
import {
  createMinter,
  MintError,
  type Caller,
  type MintContext,
  type PublicJwk,
} from './minter-api.js';

/** The answer header this plugin renders (docs/architecture.md's /verify table). */
export const MINTED_HEADERS = [
  {
    name: 'X-Auth-Set (minted values)',
    on: '204, policies with `mint`',
    meaning:
      'after the set\'s name and a space, the caller\'s minted values as one JSON object (ASCII), `{"<name>": "<value>", …, "expires_at": {"<name>": <epoch seconds>, …}}`; NGINX merges it into the static set\'s body (nginx/njs/minted-set.js). The answer is never edge-cached',
  },
  {
    name: 'X-Auth-Challenge',
    on: '403 (minted values)',
    meaning:
      '`mint_failed <reason>` (`exchange_refused`, `exchange_failed`, `key_unavailable`): a value of the set could not be minted, NGINX answers 502 `{"error":"mint_failed","reason":…}`; `mint_refused claim_missing`: a template names a claim the token lacks, NGINX answers 403 with that reason. `X-Accel-Expires: 0`: never stored',
  },
] as const;

/** Sets kept per policy: a user costs one entry (~1 KiB with an S3 URL). */
const MAX_SETS = 50_000;

export interface MintedGrantOptions {
  /** The policy's name: part of the cache key, so two policies never share a user's set. */
  readonly policy: string;
  readonly entries: MintSection;
  readonly context: MintContext;
  /** The pushed-revocation check, when a receiver is on. */
  readonly revocation: RevocationCheck | undefined;
  readonly logger: Logger;
  /** Counts how each fetch was served (metrics.ts's registry: `verifier_minted_sets_total`). */
  readonly onServe?: MintedCacheOptions['onServe'];
}

/** JSON with every non-ASCII character escaped, so it crosses an HTTP header unchanged. */
const asciiJson = (value: unknown) =>
  JSON.stringify(value).replace(
    /[\u007f-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );

/** The caller as the minters read it: identity from the decision, claims from the verified JWT. */
function callerOf({ token, raw }: GrantCaller): Caller {
  const { issuer, sub, client, scopes } = token.identity;
  let claims: Readonly<Record<string, unknown>> = {};
  // An opaque token (introspection) has no claims to read: templates see sub, client and scopes.
  if (raw.split('.').length === 3)
    try {
      claims = decodeJwt(raw);
    } catch {
      claims = {};
    }
  return {
    iss: issuer,
    sub,
    clientId: client || undefined,
    scopes,
    claims,
    exp: token.exp,
    token: raw,
  };
}

/** A minted grant, and the public keys of its gate-signed values (jwks.ts publishes them). */
export type MintedGrant = Grant & { readonly publicJwks: () => readonly PublicJwk[] };

/** The grant of a policy with a `mint` section; minters are built once, here. */
export function createMintedGrant(options: MintedGrantOptions): MintedGrant {
  const { policy, revocation, logger } = options;
  const minters = Object.entries(options.entries).map(([name, entry]) => {
    // The span names the policy, the value and its kind: never the value, a claim or a key.
    const work: Omit<TracedWork, 'error'> = {
      name: `mint ${entry.kind}`,
      attributes: {
        'secret_gate.policy': policy,
        'secret_gate.mint.name': name,
        'secret_gate.mint.kind': entry.kind,
      },
    };
    return [name, createMinter(entry, options.context), work] as const;
  });
  const sessions = new WeakMap<MintedSet, GrantCaller['token']>();
  const cache = createMintedCache({
    maxEntries: MAX_SETS,
    onServe: options.onServe,
    // A revocation is matched as for a token issued the second before the mint started.
    isRevoked: (set) => {
      const token = sessions.get(set);
      if (revocation === undefined || token === undefined) return false;
      const session = {
        sid: token.session?.sid,
        email: token.session?.email,
        iat: Math.floor(set.mintedAt) - 1,
      };
      const verdict = revocation({ identity: token.identity, session }, 'required');
      return verdict !== 'valid';
    },
  });

  async function mintSet(caller: GrantCaller, now: EpochSeconds): Promise<MintedSet> {
    const who = callerOf(caller);
    const values: Record<string, string> = {};
    const expiresAt: Record<string, number> = {};
    try {
      const minted = await Promise.all(
        minters.map(async ([name, minter, work]) => ({
          name,
          // A fresh context per mint: the channel tells concurrent mints apart by it.
          ...(await traceWork({ ...work }, () => minter.mint(who, now))),
        })),
      );
      for (const { name, value, expiresAt: at } of minted) {
        values[name] = value;
        expiresAt[name] = Math.floor(at);
      }
    } catch (error) {
      if (!(error instanceof MintError)) throw error;
      // The reason goes to the log and the body; never the token, a key or a value.
      logger.warn({ policy, code: error.code, err: error.message }, 'a set value was not minted');
      throw new VerifyError(`mint_${error.code}`, error.message);
    }
    const set: MintedSet = {
      header: asciiJson({ ...values, expires_at: expiresAt }),
      expiresAt: Math.min(...Object.values(expiresAt)),
      mintedAt: now,
    };
    sessions.set(set, caller.token);
    return set;
  }

  const grant = async function mintedGrant(
    now: EpochSeconds,
    exp: EpochSeconds,
    caller?: GrantCaller,
  ) {
    if (caller === undefined) throw new TypeError('the minted grant needs the caller');
    const { issuer, sub, client } = caller.token.identity;
    // The subject is the cache key's user: without one, two people could share a set.
    if (sub === '') throw new VerifyError('mint_claim_missing', 'the token has no "sub"');
    const key = `${issuer}\n${sub}\n${client}\n${policy}`;
    const set = await cache.get(key, now, exp, () => mintSet(caller, now));
    return [['X-Auth-Minted', set.header]] as const;
  } as Grant;
  const publicJwks = () => minters.flatMap(([, minter]) => minter.publicJwks?.() ?? []);
  return Object.assign(grant, { perCaller: true, publicJwks });
}
