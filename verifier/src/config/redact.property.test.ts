// Redaction by setting: over generated store URLs (single host, Sentinel, Cluster; user and
// password in the URL) and generated secret files (the edge key, the store password, the nonce
// key), no password, URL userinfo or file content appears in `--print-config`, in a
// configuration error, or in a log line that carries them.
import { Writable } from 'node:stream';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../log.js';
import { ConfigError, loadConfig } from './load.js';
import { printableConfig } from './print.js';

const base = { VERIFIER_ISSUER: 'https://idp.example.test', VERIFIER_AUDIENCE: 'api' };
/** Secret characters: enough to be found, none that a URL's userinfo could not hold raw. */
const secretText = fc.stringMatching(/^[A-Za-z0-9._~!$&'()*+,;=-]{8,40}$/);
const host = fc.constantFrom('cache', 'redis-0.example.test', '10.0.0.7', 'h1');
const port = fc.integer({ min: 1, max: 65535 });
const hosts = fc.array(fc.tuple(host, port), { minLength: 1, maxLength: 3 });

/** A store URL of one of the three forms, with `user:password@` in it. */
const storeUrl = fc
  .tuple(
    fc.constantFrom('rediss', 'rediss+sentinel', 'rediss+cluster'),
    secretText,
    secretText,
    hosts,
  )
  .map(([scheme, user, password, several]) => {
    // One host for the single form, one or more for Sentinel and Cluster.
    const list = scheme === 'rediss' ? several.slice(0, 1) : several;
    const at = list.map(([name, number]) => `${name}:${number}`).join(',');
    const path = scheme.endsWith('sentinel') ? '/gate' : '';
    return { url: `${scheme}://${user}:${password}@${at}${path}`, user, password };
  });

function capture(): { stream: Writable; lines: string[] } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return { stream, lines };
}

describe('redaction by setting', () => {
  it('prints no store credential, secret file content or inline password', () => {
    fc.assert(
      fc.property(
        storeUrl,
        secretText,
        secretText,
        secretText,
        (store, edgeKey, password, nonce) => {
          const edge = `${edgeKey}${'e'.repeat(32)}`;
          const nonceKey = `${nonce}${'n'.repeat(32)}`;
          const files: Record<string, string> = {
            '/run/secrets/edge-key': `${edge}\n`,
            '/run/secrets/redis-password': `${password}\n`,
          };
          const config = loadConfig(
            {
              ...base,
              VERIFIER_EDGE_KEY_FILE: '/run/secrets/edge-key',
              VERIFIER_REDIS_URL: store.url,
              VERIFIER_REDIS_SENTINEL_PASSWORD: nonceKey,
              VERIFIER_DPOP_NONCE_KEY: nonceKey,
            },
            (path) => files[path] ?? '',
          );
          const text = printableConfig(config);
          for (const secret of [edge, store.user, store.password, nonceKey])
            expect(text).not.toContain(secret);
          expect(JSON.parse(text)).toMatchObject({ edgeKeyFile: '[redacted]' });
        },
      ),
      { numRuns: 60 },
    );
  });

  it('says no URL userinfo in a configuration error, whatever else is wrong', () => {
    fc.assert(
      fc.property(storeUrl, (store) => {
        const bad = store.url.replace('rediss', 'redis');
        let message = '';
        try {
          loadConfig({ ...base, VERIFIER_REDIS_URL: bad, VERIFIER_SSF_TRANSMITTER: bad });
        } catch (error) {
          if (!(error instanceof ConfigError)) throw error;
          message = [error.message, ...error.problems].join('\n');
        }
        expect(message).not.toBe('');
        expect(message).not.toContain(store.password);
        expect(message).not.toContain(`${store.user}:`);
      }),
      { numRuns: 60 },
    );
  });

  it('writes no secret value or URL userinfo in a log line, in any field', () => {
    fc.assert(
      fc.property(storeUrl, secretText, (store, password) => {
        loadConfig({ ...base, VERIFIER_REDIS_PASSWORD: `${password}-pw` });
        const { stream, lines } = capture();
        const logger = createLogger('info', stream);
        logger.warn({ store: store.url, why: `AUTH ${password}-pw refused` }, `at ${store.url}`);
        const line = lines.join('');
        expect(line).toContain('[redacted]');
        for (const secret of [store.password, `${store.user}:`, `${password}-pw`])
          expect(line).not.toContain(secret);
      }),
      { numRuns: 60 },
    );
  });
});
