// The cached row of `npm run bench:minting`: one in-process verifier with two policies over the same
// issuer, `plain` (a static set) and `minted` (the same set plus the dev stack's minted values, an
// Algolia secured key and an S3 upload URL: stack/minted-demo.ts). Each call is what /verify does
// for one request with a cached decision: authorize (token cache hit; for `minted` the grant's
// minted-cache hit) and render the answer's headers. No socket: the transport's cost is the same
// for both but for a longer header.
import { loadConfig } from '../verifier/src/config/load.js';
import { createRenderer } from '../verifier/src/http/verify-answer.js';
import { createLogger } from '../verifier/src/log.js';
import { createVerifierService } from '../verifier/src/service.js';
import { AUDIENCE, ISSUER, mintToken, startJwksServer } from '../verifier/src/testing/fixtures.js';
import { mintedDemo } from '../stack/minted-demo.js';

export interface CachedRow {
  /** One request to the policy with minted values (served from the minted cache). */
  readonly minted: () => Promise<void>;
  /** One request to the same set without minted values. */
  readonly plain: () => Promise<void>;
  readonly close: () => Promise<unknown>;
}

export async function createCachedRow(
  dir: string,
  write: (name: string, content: string) => string,
): Promise<CachedRow> {
  const jwks = await startJwksServer(['rsaA']);
  const policy = { issuers: [ISSUER], scopes: ['secrets:read'] };
  const mint = mintedDemo(dir, (path, content) => void write(path.slice(dir.length + 1), content));
  const document = {
    issuers: [{ type: 'jwt', issuer: ISSUER, audience: AUDIENCE, jwksUri: jwks.url }],
    policies: { plain: policy, minted: { ...policy, mint } },
  };
  const config = loadConfig({ VERIFIER_CONFIG: '/bench/verifier.json' }, () =>
    JSON.stringify(document),
  );
  const service = createVerifierService(config, {
    logger: createLogger('warn'),
    defaultMetrics: false,
  });
  await service.start();
  const render = createRenderer();
  // One token for the whole run, living past it: the decision and the minted set stay cached.
  const token = await mintToken({ claims: { exp: Math.floor(Date.now() / 1000) + 3600 } });
  const request = (policy: string) => {
    const headers = { authorization: `Bearer ${token}`, policy };
    return async () => {
      const decision = await service.authorize(headers);
      if (decision.outcome !== 'allow') throw new Error(`${policy}: denied, ${decision.reason}`);
      render(decision);
    };
  };
  const minted = request('minted');
  const plain = request('plain');
  // The first minted call mints; the answer must carry the minted values from then on.
  await minted();
  const answer = render(
    await service.authorize({ authorization: `Bearer ${token}`, policy: 'minted' }),
  );
  const set = answer.headers.find(([name]) => name === 'X-Auth-Set')?.[1] ?? '';
  if (!set.includes('avatar-upload-url') || !set.includes('search-key')) {
    throw new Error('the minted policy did not answer with its minted values');
  }
  return { minted, plain, close: () => Promise.all([service.stop(0), jwks.close()]) };
}
