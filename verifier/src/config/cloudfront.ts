// The per-policy `cloudfront` section (the CloudFront plugin's settings), beside the other sections:
// validated with the document, then its key file read through the one reader and checked, so
// `--check-config` catches a bad key. The plugin (cloudfront/) reads the loaded section's type.
import type { KeyObject } from 'node:crypto';
import { z } from 'zod';
import {
  checkResourcePattern,
  cloudFrontAlgorithms,
  readPrivateKey,
  type CloudFrontAlgorithm,
} from '@secret-gate/cloudfront-signer';
import { Deferred, section } from './values.js';

const MAX_TTL_SECONDS = 7 * 24 * 3600;
// A cookie Domain goes into a Set-Cookie header: a host name (legacy leading dot allowed), no more.
const cookieDomainShape =
  /^\.?(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
const must = (phrase: string) => ({ error: `must be ${phrase}` });
const keyPairIdPhrase = must('the CloudFront public key ID (letters and digits)');
const ttlPhrase = must(`a whole number of seconds from 1 to ${MAX_TTL_SECONDS}`);
const domainPhrase = must('a host name such as cdn.example.com');

const cloudFrontSettings = section({
  keyPairId: z
    .string(keyPairIdPhrase)
    .regex(/^[A-Za-z0-9]{1,128}$/, keyPairIdPhrase)
    .describe('The CloudFront public key ID (letters and digits).'),
  privateKeyFile: z
    .string(must('the path of the private key file'))
    .min(1, must('the path of the private key file'))
    .describe(
      'Path of the PEM (or JWK JSON) private key: RSA 2048-bit, or ECDSA P-256 for `ECDSA-SHA256`.',
    ),
  algorithm: z
    .enum(
      cloudFrontAlgorithms as [CloudFrontAlgorithm],
      must(`one of ${cloudFrontAlgorithms.join(', ')}`),
    )
    .prefault('RSA-SHA256')
    .describe(
      '`RSA-SHA256` (preferred: CloudFront accepts SHA-256 for cookies and URLs), `ECDSA-SHA256` or `RSA-SHA1`.',
    ),
  resource: z
    .string(must('an absolute http:// or https:// URL'))
    .superRefine((resource, ctx) => {
      try {
        checkResourcePattern(resource);
      } catch (error) {
        ctx.addIssue((error as Error).message.replace(/^"resource" /, ''));
      }
    })
    .describe(
      'Custom-policy resource the cookies grant, e.g. `https://cdn.example.com/private/*`.',
    ),
  ttlSeconds: z
    .number(ttlPhrase)
    .int(ttlPhrase)
    .min(1, ttlPhrase)
    .max(MAX_TTL_SECONDS, ttlPhrase)
    .describe(
      `Longest lifetime of the cookies, 1 to ${MAX_TTL_SECONDS} seconds; never past the access token's \`exp\` (expiries are rounded down to a bucket of at most a quarter of it, up to 300 s). The cookies' \`Path\` is the resource's path up to its first wildcard.`,
    ),
  cookieDomain: z
    .string(domainPhrase)
    .regex(cookieDomainShape, domainPhrase)
    .optional()
    .describe(
      "`Domain` attribute of the cookies; unset: host-only cookies. Must cover the resource's host, and the browser accepts it only when it also covers the gate's host: gate on `app.example.com`, CDN on `cdn.example.com` → `example.com`.",
    ),
}).superRefine(({ cookieDomain, resource }, ctx) => {
  const host = /^[a-z*]+:\/\/([^/:]+)/i.exec(resource)?.[1];
  if (cookieDomain === undefined || host === undefined || host.includes('*')) return;
  // RFC 6265 §5.1.3: a browser sends a `Domain` cookie to that host and its subdomains only.
  const domain = cookieDomain.replace(/^\./, '').toLowerCase();
  if (!`.${host.toLowerCase()}`.endsWith(`.${domain}`))
    ctx.addIssue({
      code: 'custom',
      input: cookieDomain,
      path: ['cookieDomain'],
      message: `must be "${host}" or a parent domain of it, or the browser never sends the cookies to CloudFront`,
    });
});

/** The section once loaded: the settings and the checked private key. */
export interface CloudFrontGateConfig extends z.output<typeof cloudFrontSettings> {
  readonly privateKey: KeyObject;
}

/**
 * The section as a policy includes it: validated settings, then the key read once at start and
 * checked against the algorithm; a problem names the file but never quotes its contents.
 */
export const cloudFrontSection = cloudFrontSettings
  .transform(
    (settings) =>
      new Deferred((io, fail): CloudFrontGateConfig | undefined => {
        const at = ['privateKeyFile'];
        const text = io.read(settings.privateKeyFile, (message) => fail(message, at));
        if (text === undefined) return undefined;
        try {
          return { ...settings, privateKey: readPrivateKey(text, settings.algorithm) };
        } catch (error) {
          const why = (error as Error).message.replace(/^"privateKey" /, '');
          fail(`${JSON.stringify(settings.privateKeyFile)}: ${why}`, at);
          return undefined;
        }
      }),
  )
  .describe('CloudFront signed cookies for allowed requests of this policy (see below).');
