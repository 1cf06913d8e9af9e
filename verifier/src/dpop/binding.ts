// The DPoP step of a decision (RFC 9449 §7), after the token's decision (cached or fresh) on every
// request, so a cached token never skips its proof. What it refuses is listed on createDpopStep.
import { hash } from 'node:crypto';
import { deny, withHeaders } from '../decision/decision.js';
import type { DpopOutcome, DpopStep } from '../decision/plugins.js';
import { VerifyError, type DenyCode } from '../errors.js';
import { dpopDenial } from './challenge.js';
import { externalUrl } from './htu.js';
import type { NonceSource } from './nonce.js';
import type { CheckedProof, ProofChecker } from './proof.js';
import type { ReplayStore } from './replay-store.js';

interface DpopStepParts {
  readonly checkProof: ProofChecker;
  /** The configured store (in-process or shared). */
  readonly store: ReplayStore;
  /** In-process store used under `allowed` while a shared store does not answer. */
  readonly fallback: ReplayStore;
  readonly nonces: NonceSource | undefined;
  readonly algorithms: readonly string[];
  /** Seconds; a proof is acceptable for twice this long, so its `jti` is kept that long. */
  readonly iatWindow: number;
  /** Told when the shared store failed (message only). */
  readonly onStoreError?: ((message: string, failedClosed: boolean) => void) | undefined;
}

/**
 * Refuses a bound token sent as Bearer (no downgrade), the DPoP scheme with an unbound token, a
 * proof that fails proof.ts, a proof signed by another key than the token's `cnf.jkt`, a missing
 * or stale server nonce (when nonces are on) and a `jti` the replay store has seen.
 */
export function createDpopStep(parts: DpopStepParts): DpopStep {
  const algs = parts.algorithms.join(' ');
  const replayTtl = parts.iatWindow * 2;
  const refuse = (code: DenyCode, detail: string | undefined, nonce?: string): DpopOutcome => ({
    decision: dpopDenial(code, nonce === undefined ? { algs } : { algs, nonce }),
    detail,
  });

  return async function dpopStep(mode, decision, { scheme, token }, request, jkt) {
    if (mode === 'off') {
      // Not a DPoP policy, but a bound token still never works as a bearer token.
      if (jkt !== undefined && decision.identity !== undefined)
        return { decision: deny('dpop_binding_mismatch'), detail: 'DPoP-bound token as Bearer' };
      return { decision, detail: undefined };
    }
    if (decision.identity === undefined) {
      // The token was refused: a DPoP client (or a DPoP-only policy) gets a DPoP challenge.
      if ((scheme === 'dpop' || mode === 'required') && decision.outcome === 'deny')
        return refuse(decision.reason, undefined);
      return { decision, detail: undefined };
    }
    if (scheme === 'bearer') {
      if (jkt !== undefined) return refuse('dpop_binding_mismatch', 'DPoP-bound token as Bearer');
      if (mode === 'required') return refuse('dpop_required', 'bearer token on a DPoP policy');
      return { decision, detail: undefined };
    }
    if (jkt === undefined)
      return refuse('dpop_binding_mismatch', 'DPoP scheme with an unbound token');
    const proof = request.dpop;
    if (proof === undefined || proof === '') return refuse('dpop_proof_missing', 'no DPoP header');
    const htu = externalUrl(request.originalOrigin, request.originalUri);
    if (htu === undefined)
      return refuse('dpop_proof_invalid', 'no external origin or path to check "htu" against');

    let checked: CheckedProof;
    try {
      checked = await parts.checkProof(proof, {
        htm: request.originalMethod ?? '',
        htu,
        accessToken: token,
      });
    } catch (error) {
      // Anything else is a bug: the authorizer answers it as internal_error.
      if (!(error instanceof VerifyError)) throw error;
      return refuse(error.code, error.message);
    }
    if (checked.jkt !== jkt)
      return refuse('dpop_binding_mismatch', 'the proof key is not the token\'s "cnf.jkt"');
    if (parts.nonces !== undefined && !parts.nonces.isValid(checked.nonce))
      return refuse('dpop_nonce_required', 'no current server nonce', parts.nonces.current());

    // Fixed-size store keys whatever the `jti`; one-shot `hash`, as for `ath`, on every proof.
    const key = hash('sha256', `${jkt}\u0000${checked.jti}`, 'base64url');
    let fresh: boolean;
    try {
      fresh = await parts.store.remember(key, replayTtl);
    } catch (error) {
      const message = (error as Error).message;
      parts.onStoreError?.(message, mode === 'required');
      if (mode === 'required' || parts.store === parts.fallback)
        return refuse('dpop_replay_unavailable', message);
      try {
        fresh = await parts.fallback.remember(key, replayTtl);
      } catch (fallbackError) {
        return refuse('dpop_replay_unavailable', (fallbackError as Error).message);
      }
    }
    if (!fresh) return refuse('dpop_proof_replayed', '"jti" was seen before');
    const nonceHeader = parts.nonces?.current();
    return {
      decision:
        nonceHeader === undefined ? decision : withHeaders(decision, [['DPoP-Nonce', nonceHeader]]),
      detail: undefined,
    };
  };
}
