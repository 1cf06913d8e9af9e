// A stand-in verifier for the NGINX tests: a plain node:http server that answers GET /verify
// exactly as docs/architecture.md specifies, decided by fixed bearer tokens instead of JWTs, and
// remembers the headers it received so tests can prove what NGINX forwards.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { MAX_REQUEST_HEAD_BYTES } from '../../verifier/src/http/uws-addon.js';
import { secretSetName } from '../../verifier/src/http/verify-answer.js';

/** The issuer the stand-in speaks for (the local default of SG_SECRETS_ISSUER). */
export const contractIssuer = 'http://127.0.0.1:8081';

/** The fixed tokens and what the stand-in answers for each. */
export const contractTokens = Object.freeze({
  /** 204 as client `spa-demo`. */
  spaDemo: 'allow-spa-demo',
  /** 204 as client `partner-app`. */
  partnerApp: 'allow-partner-app',
  /** 204 as a client the secrets file does not list. */
  unknownClient: 'allow-unknown-client',
  /** 204 as `spa-demo` with a CloudFront grant (X-Auth-CF-*). */
  cloudFront: 'allow-cloudfront',
  /** 403 with an insufficient_scope challenge. */
  missingScope: 'forbid-missing-scope',
  /** 204 as `spa-demo` that NGINX may reuse for 60 s (X-Accel-Expires). */
  cached: 'allow-cached-spa-demo',
  /** 204 as `spa-demo` after 300 ms, never to be stored (X-Accel-Expires: 0). */
  slowUncached: 'allow-slow-uncached',
});

/** A token this long (or any other starting `allow-long-`) is allowed and may be cached. */
export function longCachedToken(length: number): string {
  return `allow-long-${'x'.repeat(length - 'allow-long-'.length)}`;
}

const CF_ATTRIBUTES =
  '; Secure; HttpOnly; SameSite=Lax; Path=/; Domain=example.test; Expires=Tue, 01 Jan 2030 00:00:00 GMT';
/** The verifier's CloudFront grant: complete Set-Cookie values (verifier/src/http/verify-answer.ts). */
export const contractCloudFrontGrant = Object.freeze({
  'x-auth-cf-policy': `CloudFront-Policy=eyJTdGF0ZW1lbnQiOltdfQ__${CF_ATTRIBUTES}`,
  'x-auth-cf-signature': `CloudFront-Signature=c2lnbmF0dXJl~abc-_${CF_ATTRIBUTES}`,
  'x-auth-cf-key-pair-id': `CloudFront-Key-Pair-Id=K2JCJMDEHXQW5F${CF_ATTRIBUTES}`,
  'x-auth-cf-hash-algorithm': `CloudFront-Hash-Algorithm=SHA256${CF_ATTRIBUTES}`,
});

export interface ReceivedRequest {
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
}

export interface ContractVerifier {
  readonly server: Server;
  /** Every request seen, oldest first. */
  readonly received: ReceivedRequest[];
  close(): Promise<void>;
}

const REALM = 'Bearer realm="secret-gate"';

/** Starts the stand-in on 127.0.0.1:`port`. */
export function startContractVerifier(port: number): Promise<ContractVerifier> {
  const received: ReceivedRequest[] = [];
  // The real verifier's request-head limit (verifier/src/http/uws-addon.ts), not Node's 16 KiB.
  const server = createServer({ maxHeaderSize: MAX_REQUEST_HEAD_BYTES }, (req, res) => {
    received.push({ url: req.url ?? '', headers: { ...req.headers } });
    const auth = req.headers.authorization;
    const token = auth?.startsWith('Bearer ') ? auth.slice('Bearer '.length) : undefined;
    const allow = (client: string, extra: Record<string, string> = {}) => {
      res.writeHead(204, {
        'X-Auth-Client': client,
        'X-Auth-Set': secretSetName(contractIssuer, client) ?? '',
        ...extra,
      });
      res.end();
    };
    if (req.url !== '/verify' || req.headers['x-sg-policy'] === undefined) {
      res.writeHead(404).end();
    } else if (auth === undefined) {
      res.writeHead(401, { 'WWW-Authenticate': REALM }).end();
    } else if (token === contractTokens.spaDemo) {
      allow('spa-demo');
    } else if (token === contractTokens.partnerApp) {
      allow('partner-app');
    } else if (token === contractTokens.unknownClient) {
      allow('someone-else');
    } else if (token === contractTokens.cloudFront) {
      allow('spa-demo', contractCloudFrontGrant);
    } else if (token === contractTokens.cached || token?.startsWith('allow-long-')) {
      allow('spa-demo', { 'X-Accel-Expires': '60' });
    } else if (token === contractTokens.slowUncached) {
      setTimeout(() => allow('spa-demo', { 'X-Accel-Expires': '0' }), 300);
    } else if (token === contractTokens.missingScope) {
      res.writeHead(403, {
        'X-Auth-Challenge': `${REALM}, error="insufficient_scope", scope="secrets:read"`,
      });
      res.end();
    } else {
      res.writeHead(401, { 'WWW-Authenticate': `${REALM}, error="invalid_token"` }).end();
    }
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () =>
      resolve({
        server,
        received,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      }),
    );
  });
}
