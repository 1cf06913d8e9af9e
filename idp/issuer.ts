// The dev IdP's issuer: oauth2-mock-server's OAuth2Issuer with a key ring we control. The stock
// issuer signs with its keys in round-robin order and cannot drop a key, so a JWKS holding an
// RS256 and an ES256 key would alternate algorithms and a rotation could never retire a key.
import { randomBytes } from 'node:crypto';
import { JWKStore, OAuth2Issuer, type JWK, type TokenBuildOptions } from 'oauth2-mock-server';

/** Algorithms the dev IdP can generate keys for (asymmetric only, as the verifier requires). */
export type KeyAlg = 'RS256' | 'PS256' | 'ES256' | 'EdDSA';
export const KEY_ALGS: readonly KeyAlg[] = ['RS256', 'PS256', 'ES256', 'EdDSA'];

export interface RotateOptions {
  /** Algorithm of the new signing key (RS256 unless told). */
  readonly alg?: KeyAlg;
  /** Keep the previous signing key in the JWKS (true) or drop it at once (false). */
  readonly keepPrevious?: boolean;
}

export interface KeyInfo {
  readonly kid: string;
  readonly alg: string;
}

/**
 * An issuer whose JWKS holds an explicit set of keys and which signs every token with one
 * active key (or the `kid` a caller names). Rotation swaps in a fresh store, so the JWKS the
 * server publishes changes in one step.
 */
export class DevIssuer extends OAuth2Issuer {
  #store = new JWKStore();
  #keys: JWK[] = [];
  #activeKid = '';

  /** Generates the start-up key set: an RS256 signing key plus a published ES256 key. */
  static async create(): Promise<DevIssuer> {
    const issuer = new DevIssuer();
    const signing = await generateKey('RS256');
    const extra = await generateKey('ES256');
    await issuer.#replaceKeys([signing, extra], signing.kid);
    return issuer;
  }

  override get keys(): JWKStore {
    return this.#store;
  }

  /** The kid that signs tokens from /token unless a caller names another. */
  get activeKid(): string {
    return this.#activeKid;
  }

  /** Public view of the key set, active key first. */
  listKeys(): KeyInfo[] {
    return this.#keys.map(({ kid, alg }) => ({ kid, alg }));
  }

  /** The first published key with this algorithm, for tokens signed with a chosen algorithm. */
  kidFor(alg: string): string | undefined {
    return this.#keys.find((key) => key.alg === alg)?.kid;
  }

  /** Makes a new key the signer; the old signer stays published unless `keepPrevious` is false. */
  async rotate(options: RotateOptions = {}): Promise<{ kid: string; dropped: string | undefined }> {
    const next = await generateKey(options.alg ?? 'RS256');
    const previous = this.#activeKid;
    const keep = options.keepPrevious ?? true;
    const others = this.#keys.filter((key) => keep || key.kid !== previous);
    await this.#replaceKeys([next, ...others], next.kid);
    return { kid: next.kid, dropped: keep ? undefined : previous };
  }

  override buildToken(opts?: TokenBuildOptions): Promise<string> {
    return super.buildToken({ ...opts, kid: opts?.kid ?? this.#activeKid });
  }

  async #replaceKeys(keys: JWK[], activeKid: string): Promise<void> {
    const store = new JWKStore();
    for (const key of keys) await store.add(key);
    this.#store = store;
    this.#keys = keys;
    this.#activeKid = activeKid;
  }
}

/** A short, readable kid (`rs256-1a2b3c4d`) so logs and tests can tell keys apart. */
async function generateKey(alg: KeyAlg): Promise<JWK> {
  const kid = `${alg.toLowerCase()}-${randomBytes(4).toString('hex')}`;
  // A scratch store only to reuse the library's key generation and JWK export.
  return new JWKStore().generate(alg, alg === 'EdDSA' ? { kid, crv: 'Ed25519' } : { kid });
}
