// npm run bench:cloudfront — CloudFront URL signing throughput, all contenders in one run.
// Prints URLs/s for our signer (one at a time and in Promise.all bursts), the two npm signers,
// WebCrypto awaited call by call (why we sign lone calls inline), OpenSSL's one-core RSA-2048 sign
// rate (the physical limit), the bucketed cookie cache, and the ratios against issue 5's goals.
// Machines are shared and noisy: each contender runs in several interleaved rounds and keeps its
// best round, and only ratios from one run are meaningful.

import { execFileSync } from 'node:child_process';
import { createPrivateKey, webcrypto } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { getSignedUrl as sdkGetSignedUrl } from '@aws-sdk/cloudfront-signer';
import { getSignedUrl as legacyGetSignedUrl } from 'aws-cloudfront-sign';
import { createCloudFrontSigner } from '../verifier/src/cloudfront/index.js';

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const SECONDS = Number(process.env['BENCH_SECONDS'] ?? 2);
const BURST = 64;
const keyFile = fileURLToPath(
  new URL('../test/fixtures/cloudfront/rsa-2048.pkcs1.pem', import.meta.url),
);
const pem = readFileSync(keyFile, 'utf8');
const keyPairId = 'K2JCJMDEHXQW5F';
const expires = Math.floor(Date.now() / 1000) + 3600;
let serial = 0;
/** A fresh URL per call, so nothing can be served from a cache. */
const nextUrl = () => `https://d111111abcdef8.cloudfront.net/assets/${serial++}.jpg?v=1`;

interface Rate {
  /** Per wall-clock second. */
  readonly wall: number;
  /** Per second of this process's CPU time (user + system, every thread). */
  readonly cpu: number;
}

/** Calls `batch` (which signs `size` URLs) until `SECONDS` have passed. */
async function rate(size: number, batch: () => unknown): Promise<Rate> {
  for (let i = 0; i < 20; i++) await batch(); // warm-up: JIT, thread pool, key caches
  let done = 0;
  const cpuBefore = process.cpuUsage();
  const start = performance.now();
  while (performance.now() - start < SECONDS * 1000) {
    await batch();
    done += size;
  }
  const wallSeconds = (performance.now() - start) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  return { wall: done / wallSeconds, cpu: done / ((cpu.user + cpu.system) / 1e6) };
}

/**
 * `openssl speed -seconds 3 rsa2048`: RSA-2048 signs per second on one core. OpenSSL divides by
 * the user CPU time it consumed (unless `-elapsed` is given), so its figure is per CPU-second.
 */
function opensslRate(): Rate {
  const out = execFileSync('openssl', ['speed', '-seconds', '3', 'rsa2048'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const line = /^rsa 2048 bits\s+\S+\s+\S+\s+([\d.]+)/m.exec(out);
  if (!line?.[1]) throw new Error('could not read the sign/s figure from openssl speed');
  return { wall: Number.NaN, cpu: Number(line[1]) };
}

const ours = await createCloudFrontSigner({ keyPairId, privateKey: pem, cacheSize: 0 });
const webCryptoKey = await webcrypto.subtle.importKey(
  'pkcs8',
  createPrivateKey(pem).export({ format: 'der', type: 'pkcs8' }),
  { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-1' },
  false,
  ['sign'],
);

const contenders: Record<string, () => Promise<Rate>> = {
  'openssl speed rsa2048 (1 core)': async () => opensslRate(),
  'ours, sequential': () => rate(1, () => ours.signUrl({ url: nextUrl(), expires })),
  [`ours, Promise.all x${BURST}`]: () =>
    rate(BURST, () =>
      Promise.all(Array.from({ length: BURST }, () => ours.signUrl({ url: nextUrl(), expires }))),
    ),
  '@aws-sdk/cloudfront-signer': () =>
    rate(1, () =>
      sdkGetSignedUrl({
        url: nextUrl(),
        keyPairId,
        privateKey: pem,
        dateLessThan: new Date(expires * 1000),
      }),
    ),
  'aws-cloudfront-sign': () =>
    rate(1, () =>
      legacyGetSignedUrl(nextUrl(), {
        keypairId: keyPairId,
        privateKeyString: pem,
        expireTime: expires * 1000,
      }),
    ),
  'subtle.sign awaited one by one': () =>
    rate(1, () => webcrypto.subtle.sign('RSASSA-PKCS1-v1_5', webCryptoKey, Buffer.from(nextUrl()))),
};

/** Cookies per second when every call lands in an already signed window. */
async function cacheHitRate(): Promise<Rate> {
  const signer = await createCloudFrontSigner({ keyPairId, privateKey: pem, bucketSeconds: 300 });
  const resource = 'https://d111111abcdef8.cloudfront.net/private/*';
  const windowEnd = Math.ceil((Math.floor(Date.now() / 1000) + 3600) / 300) * 300;
  let i = 0;
  // Every expiry inside one window rounds up to `windowEnd`: one signature, then hits.
  return rate(1000, async () => {
    for (let n = 0; n < 1000; n++)
      await signer.signCookies({ resource, expires: windowEnd - (i++ % 299) });
  });
}

/** Share of requests served from the cache: 100,000 sign-ins over one hour, 10-minute cookies. */
async function cacheHitRatio(): Promise<{ requests: number; signatures: number }> {
  const start = Math.floor(Date.now() / 1000);
  let clock = start;
  const signer = await createCloudFrontSigner({
    keyPairId,
    privateKey: pem,
    bucketSeconds: 300,
    now: () => clock,
  });
  const requests = 100_000;
  const windows = new Set<number>();
  for (let n = 0; n < requests; n++) {
    clock = start + Math.floor((n * 3600) / requests);
    const { expires: signed } = await signer.signCookies({
      resource: 'https://d111111abcdef8.cloudfront.net/private/*',
      expires: clock + 600,
    });
    windows.add(signed); // one resource, so each distinct expiry is exactly one signature
  }
  return { requests, signatures: windows.size };
}

console.log(
  `CloudFront signing, RSA-2048 SHA-1, Node ${process.version}, ${availableParallelism()} cores, ` +
    `best of ${ROUNDS} rounds of ${SECONDS} s`,
);
const best: Record<string, { wall: number; cpu: number }> = {};
const keep = (name: string, value: Rate) => {
  const previous = best[name];
  best[name] = {
    wall: Math.max(previous?.wall ?? 0, value.wall),
    cpu: Math.max(previous?.cpu ?? 0, value.cpu),
  };
};
for (let round = 1; round <= ROUNDS; round++) {
  for (const [name, run] of Object.entries(contenders)) keep(name, await run());
  keep('cache hit (cookies)', await cacheHitRate());
  process.stderr.write(`round ${round}/${ROUNDS} done\n`);
}
const ratio = await cacheHitRatio();

const width = Math.max(...Object.keys(best).map((name) => name.length));
const show = (n: number) => (Number.isNaN(n) ? '-' : n.toFixed(0)).padStart(12);
console.log(
  `\n  ${'signed per second'.padEnd(width)}  ${'wall clock'.padStart(12)}  ${'CPU second'.padStart(12)}`,
);
for (const [name, value] of Object.entries(best)) {
  console.log(`  ${name.padEnd(width)}  ${show(value.wall)}  ${show(value.cpu)}`);
}
console.log(
  `\ncache: ${ratio.requests} requests over 1 h (TTL 600 s, 300 s buckets) needed ${ratio.signatures} ` +
    `signatures: hit rate ${((1 - ratio.signatures / ratio.requests) * 100).toFixed(3)} %`,
);

const wall = (name: string) => best[name]?.wall ?? 0;
const cpu = (name: string) => best[name]?.cpu ?? 0;
const SEQ = 'ours, sequential';
const PAR = `ours, Promise.all x${BURST}`;
const SDK = '@aws-sdk/cloudfront-signer';
// Against OpenSSL the CPU-second column is used because that is what `openssl speed` reports;
// the parallel gain is only visible on the wall clock.
const goals: Array<[string, number, number]> = [
  [
    'ours sequential / openssl one core (CPU s)',
    cpu(SEQ) / cpu('openssl speed rsa2048 (1 core)'),
    0.8,
  ],
  ['ours Promise.all / ours sequential (wall)', wall(PAR) / wall(SEQ), 1.5],
  ['ours sequential / @aws-sdk (wall)', wall(SEQ) / wall(SDK), 3],
  ['cache hit, cookies per wall second', wall('cache hit (cookies)'), 100_000],
];
console.log('\ngoals (issue 5)');
for (const [name, value, goal] of goals) {
  const shown = goal >= 1000 ? value.toFixed(0) : `${value.toFixed(2)}x`;
  console.log(
    `  ${value >= goal ? 'met   ' : 'MISSED'}  ${name.padEnd(44)} ${shown.padStart(9)}  (goal >= ${goal})`,
  );
}
console.log('\nfor reference');
console.log(`  ours sequential / @aws-sdk (CPU s)            ${(cpu(SEQ) / cpu(SDK)).toFixed(2)}x`);
console.log(
  `  ours Promise.all / @aws-sdk (wall)            ${(wall(PAR) / wall(SDK)).toFixed(2)}x`,
);
console.log(
  `  ours sequential / subtle.sign awaited (wall)  ${(wall(SEQ) / wall('subtle.sign awaited one by one')).toFixed(2)}x`,
);
console.log(
  `  ours sequential / subtle.sign awaited (CPU s) ${(cpu(SEQ) / cpu('subtle.sign awaited one by one')).toFixed(2)}x`,
);
