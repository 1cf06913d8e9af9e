import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GrantCaller, RevocationCheck } from '../decision/decision.js';
import { VerifyError } from '../errors.js';
import { createLogger } from '../log.js';
import { renderDecision } from '../http/verify-answer.js';
import { createMintedGrant } from './grant.js';
import type { MintEntry } from './minter-api.js';

const NOW = 1_800_000_000;
let dir: string;
let keyFile: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'sg-minted-grant-'));
  keyFile = join(dir, 'key');
  writeFileSync(keyFile, 'k'.repeat(40), { mode: 0o600 });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const entry = (
  claims: Record<string, string> = {},
  ttlSeconds = 300,
  file = keyFile,
): MintEntry & { kind: 'jwt' } => ({
  kind: 'jwt',
  alg: 'HS256',
  keyFile: file,
  ttlSeconds,
  claims,
});

/** A caller as the decision path hands it over: an opaque raw token, so no claims are read. */
const caller = (sub: string, exp = NOW + 3600, client = 'spa-demo'): GrantCaller => ({
  token: {
    identity: { sub, client, scopes: ['secrets:read'], issuer: 'https://idp.test' },
    exp,
    session: { iat: NOW - 10, sid: undefined, email: undefined },
  },
  raw: 'opaque-token',
});

function grantOf(mint: Record<string, MintEntry>, revocation?: RevocationCheck) {
  return createMintedGrant({
    policy: 'secret',
    entries: mint,
    context: {},
    revocation,
    logger: createLogger('silent'),
  });
}

/** The minted JSON as NGINX reads it after the set's name in X-Auth-Set. */
async function minted(grant: ReturnType<typeof grantOf>, who: GrantCaller, now = NOW) {
  const headers = await grant(now, who.token.exp, who);
  const answer = renderDecision({
    outcome: 'allow',
    reason: 'allowed',
    identity: who.token.identity,
    headers,
  });
  const set = answer.headers.find(([name]) => name === 'X-Auth-Set')?.[1] ?? '';
  expect(answer.headers.map(([name]) => name)).not.toContain('X-Auth-Minted');
  const [name, ...json] = set.split(' ');
  expect(name).toMatch(/^c[0-9a-f]{32}$/);
  return JSON.parse(json.join(' ')) as Record<string, string> & {
    expires_at: Record<string, number>;
  };
}

describe('the minted grant', () => {
  it('renders each value and its expiry after the set name, never past the token', async () => {
    const grant = grantOf({ 'chat-token': entry({ user_id: '{sub}' }) });
    expect(grant.perCaller).toBe(true);
    const body = await minted(grant, caller('ana'));
    expect(decodeJwt(body['chat-token']!)).toMatchObject({ sub: 'ana', user_id: 'ana' });
    expect(body.expires_at).toEqual({ 'chat-token': NOW + 300 });
    const short = await minted(grantOf({ t: entry() }), caller('ben', NOW + 60));
    expect(short.expires_at).toEqual({ t: NOW + 60 });
  });

  it("serves a user's set from the cache, and another user's their own", async () => {
    const grant = grantOf({ t: entry() });
    const first = await minted(grant, caller('ana'));
    expect(await minted(grant, caller('ana'), NOW + 100)).toEqual(first);
    expect(decodeJwt((await minted(grant, caller('ben'), NOW + 100)).t!).sub).toBe('ben');
  });

  it('mints again once a revocation of the user is newer than the cached set', async () => {
    let revokedBefore = 0;
    const grant = grantOf({ t: entry() }, (token) =>
      (token.session?.iat ?? 0) < revokedBefore ? 'revoked' : 'valid',
    );
    const first = await minted(grant, caller('ana'));
    revokedBefore = NOW + 5;
    const after = await minted(grant, caller('ana'), NOW + 10);
    expect(after.expires_at.t).toBe(NOW + 310);
    expect(after.t).not.toBe(first.t);
  });

  it('refuses with mint_claim_missing when a template names a claim the token lacks, or no sub', async () => {
    const grant = grantOf({ t: entry({ tenant: '{claims.tenant}' }) });
    await expect(grant(NOW, NOW + 3600, caller('ana'))).rejects.toMatchObject({
      code: 'mint_claim_missing',
    });
    await expect(grantOf({ t: entry() })(NOW, NOW + 3600, caller(''))).rejects.toBeInstanceOf(
      VerifyError,
    );
  });

  it('refuses with mint_key_unavailable when the key file became readable by others', async () => {
    const file = join(dir, 'opened');
    writeFileSync(file, 'k'.repeat(40), { mode: 0o600 });
    const grant = grantOf({ t: entry({}, 300, file) });
    chmodSync(file, 0o644);
    // The package looks at a key file again once a second.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    await expect(grant(NOW, NOW + 3600, caller('ana'))).rejects.toMatchObject({
      code: 'mint_key_unavailable',
    });
  });
});
