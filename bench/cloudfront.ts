// npm run bench:cloudfront — CloudFront URL signing throughput, all contenders in one run.
// Prints URLs/s for our signer (one at a time and in Promise.all bursts), the two npm signers,
// WebCrypto awaited call by call (why we sign lone calls inline), OpenSSL's one-core RSA-2048 sign
// rate (the physical limit), the bucketed cookie cache, and the ratios against issue 5's goals.
// Machines are shared and noisy, so contenders take turns in short slices and every ratio is the
// median of ratios between neighbouring slices: load that drifts over seconds cancels out.

import { execFileSync } from 'node:child_process';
import { createPrivateKey, webcrypto } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { getSignedUrl as sdkGetSignedUrl } from '@aws-sdk/cloudfront-signer';
import { getSignedUrl as legacyGetSignedUrl } from 'aws-cloudfront-sign';
import { createCloudFrontSigner } from '@secret-gate/cloudfront-signer';

const SLICES = Number(process.env['BENCH_SLICES'] ?? 15);
const SLICE_MS = Number(process.env['BENCH_SLICE_MS'] ?? 300);
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

/** Calls `batch` (which signs `size` items) for `ms` milliseconds. */
async function rate(size: number, batch: () => unknown, ms = SLICE_MS): Promise<Rate> {
  let done = 0;
  const cpuBefore = process.cpuUsage();
  const start = performance.now();
  while (performance.now() - start < ms) {
    await batch();
    done += size;
  }
  const wallSeconds = (performance.now() - start) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  return { wall: done / wallSeconds, cpu: done / ((cpu.user + cpu.system) / 1e6) };
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2
    ? (sorted[mid] ?? NaN)
    : ((sorted[mid - 1] ?? NaN) + (sorted[mid] ?? NaN)) / 2;
};

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

const contenders: Record<string, { size: number; batch: () => unknown }> = {
  'ours, sequential': { size: 1, batch: () => ours.signUrl({ url: nextUrl(), expires }) },
  [`ours, Promise.all x${BURST}`]: {
    size: BURST,
    batch: () =>
      Promise.all(Array.from({ length: BURST }, () => ours.signUrl({ url: nextUrl(), expires }))),
  },
  '@aws-sdk/cloudfront-signer': {
    size: 1,
    batch: () =>
      sdkGetSignedUrl({
        url: nextUrl(),
        keyPairId,
        privateKey: pem,
        dateLessThan: new Date(expires * 1000),
      }),
  },
  'aws-cloudfront-sign': {
    size: 1,
    batch: () =>
      legacyGetSignedUrl(nextUrl(), {
        keypairId: keyPairId,
        privateKeyString: pem,
        expireTime: expires * 1000,
      }),
  },
  'subtle.sign awaited one by one': {
    size: 1,
    batch: () => webcrypto.subtle.sign('RSASSA-PKCS1-v1_5', webCryptoKey, Buffer.from(nextUrl())),
  },
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
    `${SLICES} turns of ${SLICE_MS} ms per contender, medians`,
);
const OPENSSL = 'openssl speed rsa2048 (1 core)';
const slices: Record<string, Rate[]> = { [OPENSSL]: [] };
for (const [name, { batch }] of Object.entries(contenders)) {
  slices[name] = [];
  for (let i = 0; i < 20; i++) await batch(); // warm-up: JIT, thread pool, key caches
}
for (let turn = 0; turn < SLICES; turn++) {
  // OpenSSL three times (start, middle, end): it reports per CPU-second, so it needs no pairing.
  if (turn === 0 || turn === SLICES >> 1 || turn === SLICES - 1)
    slices[OPENSSL]?.push(opensslRate());
  for (const [name, { size, batch }] of Object.entries(contenders))
    slices[name]?.push(await rate(size, batch));
}
const hits = await cacheHitRate();
const ratio = await cacheHitRatio();

const summary = Object.entries(slices).map(([name, rates]) => ({
  name,
  wall: median(rates.map((r) => r.wall)),
  cpu: median(rates.map((r) => r.cpu)),
}));
summary.push({ name: 'cache hit (cookies)', ...hits });
const width = Math.max(...summary.map(({ name }) => name.length));
const show = (n: number) => (Number.isNaN(n) ? '-' : n.toFixed(0)).padStart(12);
console.log(
  `\n  ${'signed per second'.padEnd(width)}  ${'wall clock'.padStart(12)}  ${'CPU second'.padStart(12)}`,
);
for (const { name, wall, cpu } of summary)
  console.log(`  ${name.padEnd(width)}  ${show(wall)}  ${show(cpu)}`);
console.log(
  `\ncache: ${ratio.requests} requests over 1 h (TTL 600 s, 300 s buckets) needed ${ratio.signatures} ` +
    `signatures: hit rate ${((1 - ratio.signatures / ratio.requests) * 100).toFixed(3)} %`,
);

/** Median over turns of a/b, each pair measured back to back. */
const paired = (a: string, b: string, column: keyof Rate) =>
  median((slices[a] ?? []).map((rate, i) => rate[column] / (slices[b]?.[i]?.[column] ?? NaN)));
const SEQ = 'ours, sequential';
const PAR = `ours, Promise.all x${BURST}`;
const SDK = '@aws-sdk/cloudfront-signer';
const opensslCpu = median((slices[OPENSSL] ?? []).map((r) => r.cpu));
const seqCpu = median((slices[SEQ] ?? []).map((r) => r.cpu));
// Against OpenSSL the CPU-second column is used because that is what `openssl speed` reports
// (it divides by its user CPU time); the parallel gain only shows on the wall clock.
const goals: Array<[string, number, number]> = [
  ['ours sequential / openssl one core (CPU s)', seqCpu / opensslCpu, 0.8],
  ['ours Promise.all / ours sequential (wall)', paired(PAR, SEQ, 'wall'), 1.5],
  ['ours sequential / @aws-sdk (wall)', paired(SEQ, SDK, 'wall'), 3],
  ['cache hit, cookies per wall second', hits.wall, 100_000],
];
console.log('\ngoals (issue 5)');
for (const [name, value, goal] of goals) {
  const shown = goal >= 1000 ? value.toFixed(0) : `${value.toFixed(2)}x`;
  console.log(
    `  ${value >= goal ? 'met   ' : 'MISSED'}  ${name.padEnd(44)} ${shown.padStart(9)}  (goal >= ${goal})`,
  );
}
const load = loadavg()[0] ?? 0;
console.log('\nfor reference');
for (const [label, value] of [
  [
    'ours sequential / openssl one core (wall/CPU s)',
    median((slices[SEQ] ?? []).map((r) => r.wall)) / opensslCpu,
  ],
  ['ours sequential / @aws-sdk (CPU s)', paired(SEQ, SDK, 'cpu')],
  ['ours Promise.all / @aws-sdk (wall)', paired(PAR, SDK, 'wall')],
  ['ours sequential / aws-cloudfront-sign (wall)', paired(SEQ, 'aws-cloudfront-sign', 'wall')],
  [
    'ours sequential / subtle.sign awaited (wall)',
    paired(SEQ, 'subtle.sign awaited one by one', 'wall'),
  ],
  [
    'ours sequential / subtle.sign awaited (CPU s)',
    paired(SEQ, 'subtle.sign awaited one by one', 'cpu'),
  ],
] as const) {
  console.log(`  ${label.padEnd(48)} ${value.toFixed(2)}x`);
}
console.log(
  `  1-minute load average at the end: ${load.toFixed(2)} on ${availableParallelism()} cores`,
);
if (load > availableParallelism()) {
  console.log(
    '  (other processes held the CPUs: wall-clock figures, the parallel gain above all, are understated)',
  );
}
