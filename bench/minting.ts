// npm run bench:minting — µs per fresh mint for each kind of @secret-gate/credential-minter,
// beside the bare primitive of the same payload in the same run: one `crypto.createHmac` for the
// HMAC kinds, one `crypto.sign` for the asymmetric JWTs, one SigV4 HMAC chain for S3. The
// difference is what the kind adds (templates, JSON, base64, the key file's stat check).
// Contenders take turns in short slices and each difference is the median over neighbouring
// slices, so load that drifts on a shared machine cancels out. token-exchange is an IdP round
// trip and is not measured here.

import { createHmac, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createMinter,
  mintEntrySchema,
  type Caller,
  type MintEntryInput,
} from '@secret-gate/credential-minter';

const SLICES = Number(process.env['BENCH_SLICES'] ?? 15);
const SLICE_MS = Number(process.env['BENCH_SLICE_MS'] ?? 200);
const dir = mkdtempSync(join(tmpdir(), 'bench-minting-'));
const secret = 'bench-parent-key-0123456789abcdef0123456789';
const write = (name: string, content: string): string => {
  const path = join(dir, name);
  writeFileSync(path, content, { mode: 0o600 });
  chmodSync(path, 0o600);
  return path;
};
const pemOf = (key: KeyObject) => key.export({ format: 'pem', type: 'pkcs8' }).toString();
const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
const ed = generateKeyPairSync('ed25519').privateKey;
const textKey = write('text.key', secret);

let serial = 0;
/** A different user per call: every mint is fresh (the package has no cache of its own). */
function nextCaller(): Caller {
  serial += 1;
  return {
    iss: 'https://idp.example.com',
    sub: `user-${serial}`,
    clientId: 'spa-demo',
    scopes: ['secrets:read'],
    claims: { tenant: `t${serial % 97}` },
    exp: Math.floor(Date.now() / 1000) + 3600,
    token: 'unused',
  };
}
/** A JWT-sized payload for the bare primitives, also fresh per call. */
const bareInput = () =>
  `eyJhbGciOiJFUzI1NiJ9.${Buffer.from(JSON.stringify({ sub: `user-${++serial}`, tenant: 'acme', exp: 1e9 })).toString('base64url')}`;

interface Row {
  name: string;
  entry: MintEntryInput;
  bare: { name: string; run: () => void };
}
const hmac = {
  name: 'createHmac',
  run: () => void createHmac('sha256', secret).update(bareInput()).digest(),
};
const rows: Row[] = [
  {
    name: 'jwt HS256',
    entry: { kind: 'jwt', alg: 'HS256', keyFile: textKey, claims: { tenant: '{claims.tenant}' } },
    bare: hmac,
  },
  {
    name: 'jwt ES256',
    entry: {
      kind: 'jwt',
      alg: 'ES256',
      keyFile: write('ec.pem', pemOf(ec)),
      claims: { tenant: '{claims.tenant}' },
    },
    bare: {
      name: 'crypto.sign ES256',
      run: () =>
        void sign('sha256', Buffer.from(bareInput()), { key: ec, dsaEncoding: 'ieee-p1363' }),
    },
  },
  {
    name: 'jwt RS256',
    entry: { kind: 'jwt', alg: 'RS256', keyFile: write('rsa.pem', pemOf(rsa)) },
    bare: {
      name: 'crypto.sign RS256',
      run: () => void sign('sha256', Buffer.from(bareInput()), rsa),
    },
  },
  {
    name: 'jwt EdDSA',
    entry: { kind: 'jwt', alg: 'EdDSA', keyFile: write('ed.pem', pemOf(ed)) },
    bare: { name: 'crypto.sign Ed25519', run: () => void sign(null, Buffer.from(bareInput()), ed) },
  },
  {
    name: 'stream-chat-token',
    entry: { kind: 'stream-chat-token', secretFile: textKey },
    bare: hmac,
  },
  {
    name: 'livekit-token',
    entry: {
      kind: 'livekit-token',
      apiKey: 'APIkey',
      secretFile: textKey,
      room: 'r-{claims.tenant}',
    },
    bare: hmac,
  },
  {
    name: 'algolia-secured-key',
    entry: {
      kind: 'algolia-secured-key',
      parentKeyFile: textKey,
      filters: 'tenant:{claims.tenant}',
    },
    bare: hmac,
  },
  {
    name: 'typesense-scoped-key',
    entry: {
      kind: 'typesense-scoped-key',
      parentKeyFile: textKey,
      filterBy: 'tenant:={claims.tenant}',
    },
    bare: hmac,
  },
  {
    name: 'meilisearch-tenant-token',
    entry: {
      kind: 'meilisearch-tenant-token',
      apiKeyFile: textKey,
      apiKeyUid: '85c3c2f9-bdd6-41f1-abd8-11fcf80e0f76',
      searchRules: { docs: { filter: 'tenant = {claims.tenant}' } },
    },
    bare: hmac,
  },
  {
    name: 's3-presigned-url',
    entry: {
      kind: 's3-presigned-url',
      method: 'PUT',
      bucket: 'uploads',
      key: 'users/{sub}/avatar.png',
      region: 'eu-west-1',
      credentialsFile: write(
        's3.json',
        JSON.stringify({ accessKeyId: 'AKIAEXAMPLE', secretAccessKey: secret }),
      ),
    },
    // SigV4 is five chained HMACs (date, region, service, signing key, signature) and a SHA-256.
    bare: {
      name: '5×createHmac (SigV4 chain)',
      run: () => {
        let key: Buffer | string = `AWS4${secret}`;
        for (const part of ['20261204', 'eu-west-1', 's3', 'aws4_request', bareInput()]) {
          key = createHmac('sha256', key).update(part).digest();
        }
      },
    },
  },
];

/** Runs `once` for about `ms` and returns µs per call. */
async function slice(once: () => unknown, ms: number): Promise<number> {
  let calls = 0;
  const start = process.hrtime.bigint();
  const end = start + BigInt(ms * 1e6);
  while (process.hrtime.bigint() < end) {
    for (let i = 0; i < 50; i += 1) await once();
    calls += 50;
  }
  return Number(process.hrtime.bigint() - start) / 1e3 / calls;
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;

console.log(
  `credential-minter: µs per fresh mint, ${SLICES} slices of ${SLICE_MS} ms per contender\n`,
);
console.log(
  'kind                       mint µs   bare primitive                 bare µs   added µs',
);
for (const row of rows) {
  const minter = createMinter(mintEntrySchema.parse(row.entry));
  const mint = () => minter.mint(nextCaller(), Date.now() / 1000);
  await slice(mint, 100);
  await slice(row.bare.run, 100);
  const mints: number[] = [];
  const bares: number[] = [];
  const added: number[] = [];
  for (let i = 0; i < SLICES; i += 1) {
    const a = await slice(mint, SLICE_MS);
    const b = await slice(row.bare.run, SLICE_MS);
    mints.push(a);
    bares.push(b);
    added.push(a - b);
  }
  console.log(
    `${row.name.padEnd(26)} ${median(mints).toFixed(1).padStart(7)}   ${row.bare.name.padEnd(30)} ${median(bares).toFixed(1).padStart(7)}   ${median(added).toFixed(1).padStart(8)}`,
  );
}
rmSync(dir, { recursive: true, force: true });
