import {
  existsSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { secretSetName } from '../../verifier/src/http/verify-answer.js';
import secretSets from './secret-sets.js';

const ISS_A = 'https://idp-a.example';
const ISS_B = 'https://idp-b.example';

let work: string;
let setsDir: string;
beforeEach(() => {
  work = mkdtempSync(path.join(tmpdir(), 'sg-sets-'));
  setsDir = path.join(work, 'sg-secret-sets');
});
afterEach(() => rmSync(work, { recursive: true, force: true }));

function publishText(text: string, clientsIssuer = ISS_A) {
  const secretsFile = path.join(work, 'secrets.json');
  writeFileSync(secretsFile, text);
  return secretSets.publish({ setsDir, secretsFile, clientsIssuer });
}

/** What NGINX serves for (issuer, client): its own set's file, else the default set's. */
function served(issuer: string, client: string): unknown {
  const own = path.join(setsDir, 'current', secretSetName(issuer, client) ?? '-', 'secret');
  const file = existsSync(own) ? own : path.join(setsDir, 'current', 'default', 'secret');
  return JSON.parse(readFileSync(file, 'utf8'));
}

const file = {
  default: { k: 'default' },
  clients: { 'spa-demo': { k: 'spa' } },
  issuers: { [ISS_B]: { 'spa-demo': { k: 'spa-of-b' }, other: { k: 'other' } } },
};

describe('publish: the secret sets as the files NGINX serves', () => {
  it("names each set as the verifier does: a client gets its issuer's set for it, else the default set", () => {
    expect(publishText(JSON.stringify(file))).toMatchObject({ generation: expect.any(String) });
    for (const [issuer, client, expected] of [
      [ISS_A, 'spa-demo', { k: 'spa' }],
      [ISS_B, 'spa-demo', { k: 'spa-of-b' }],
      [ISS_B, 'other', { k: 'other' }],
      [ISS_A, 'other', { k: 'default' }],
      ['https://idp-c.example', 'spa-demo', { k: 'default' }],
    ] as const) {
      expect(served(issuer, client), `${issuer} ${client}`).toEqual(expected);
      expect(secretSets.setName(issuer, client)).toBe(secretSetName(issuer, client));
    }
  });

  it('switches `current` in one step and removes the previous generation, so a removed client falls back to the default set', () => {
    const first = publishText(JSON.stringify(file));
    const second = publishText(JSON.stringify({ default: { k: 'default-2' } }));
    expect(second).not.toEqual(first);
    expect(readlinkSync(path.join(setsDir, 'current'))).toBe(
      (second as { generation: string }).generation,
    );
    expect(readdirSync(setsDir).sort()).toEqual(
      ['current', (second as { generation: string }).generation].sort(),
    );
    expect(served(ISS_A, 'spa-demo')).toEqual({ k: 'default-2' });
  });

  it('reports a broken or ambiguous file and leaves what is published alone', () => {
    publishText(JSON.stringify(file));
    expect(publishText('{"default": ')).toEqual({ problem: 'secrets file cannot be read as JSON' });
    expect(publishText(JSON.stringify(file), '')).toMatchObject({
      problem: expect.stringContaining('ambiguous'),
    });
    expect(served(ISS_A, 'spa-demo')).toEqual({ k: 'spa' });
  });

  it("writes the sets for the watcher's own user only, unless NGINX's workers run as another", () => {
    publishText(JSON.stringify(file));
    const own = path.join(setsDir, 'current', 'default');
    expect(statSync(own).mode & 0o777).toBe(0o700);
    expect(statSync(path.join(own, 'secret')).mode & 0o777).toBe(0o600);
    const secretsFile = path.join(work, 'secrets.json');
    writeFileSync(secretsFile, JSON.stringify({ default: { k: 'shared' } }));
    secretSets.publish({ setsDir, secretsFile, clientsIssuer: ISS_A, shared: true });
    expect(statSync(path.join(setsDir, 'current', 'default', 'secret')).mode & 0o777).toBe(0o644);
  });

  it("publishes each named policy's sets in its own tree, chosen the same way", () => {
    const named = {
      ...file,
      policies: {
        payments: { default: { p: 'pay-default' }, clients: { 'spa-demo': { p: 'pay-spa' } } },
        reports: { issuers: { [ISS_B]: { other: { r: 'rep-other' } } } },
      },
    };
    expect(publishText(JSON.stringify(named))).toMatchObject({ generation: expect.any(String) });
    const tree = (policy: string, set: string) =>
      JSON.parse(
        readFileSync(path.join(setsDir, 'current', 'policies', policy, set, 'secret'), 'utf8'),
      ) as unknown;
    expect(tree('payments', secretSetName(ISS_A, 'spa-demo') ?? '')).toEqual({ p: 'pay-spa' });
    expect(tree('payments', 'default')).toEqual({ p: 'pay-default' });
    expect(tree('reports', secretSetName(ISS_B, 'other') ?? '')).toEqual({ r: 'rep-other' });
    // A policy without a default set has an empty one, like the top level.
    expect(tree('reports', 'default')).toEqual({});
    // The top level (policy `secret`) is where it always was.
    expect(served(ISS_A, 'spa-demo')).toEqual({ k: 'spa' });
    expect(readdirSync(path.join(setsDir, 'current', 'policies')).sort()).toEqual([
      'payments',
      'reports',
    ]);
  });

  it.each([
    ['a name NGINX could not route', { Payments: { default: {} } }],
    ["the top level's own name", { secret: { default: {} } }],
    ['a name that is a path', { '../x': { default: {} } }],
    ['an entry that is not an object', { payments: [] }],
    ['an entry with policies of its own', { payments: { default: {}, policies: {} } }],
    ['an entry with none of the parts', { payments: { 'x-api-key': 'flat' } }],
  ])('refuses a "policies" map with %s and publishes nothing new', (_, policies) => {
    publishText(JSON.stringify(file));
    expect(publishText(JSON.stringify({ ...file, policies }))).toMatchObject({
      problem: expect.stringContaining('secrets file'),
    });
    expect(served(ISS_A, 'spa-demo')).toEqual({ k: 'spa' });
  });

  it('withdraws every set, so NGINX answers 503', () => {
    publishText(JSON.stringify(file));
    secretSets.withdraw(setsDir);
    expect(readdirSync(setsDir)).toEqual([]);
  });
});
