import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import mintedSet from './minted-set.js';

let root: string;
const MINTED = '{"chat-token":"v","expires_at":{"chat-token":1800000300}}';
const OWN = `c${'a'.repeat(32)}`;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'sg-minted-njs-'));
  for (const [name, body] of [
    [OWN, '{"x-api-key":"own"}'],
    ['default', '{"x-api-key":"default"}'],
  ] as const) {
    mkdirSync(join(root, name));
    writeFileSync(join(root, name, 'secret'), body);
  }
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A fake `r` with the variables NGINX sets, recording the answer. */
function deliver(set: string) {
  const answer = { status: 0, body: '', headers: {} as Record<string, string>, logged: '' };
  mintedSet.deliver({
    variables: { sg_minted_root: root, sg_auth_set: set },
    headersOut: answer.headers,
    error: (line: string) => (answer.logged = line),
    return: (status: number, body: string) => Object.assign(answer, { status, body }),
  });
  return answer;
}

describe('the body of a set with minted values', () => {
  it("is the caller's static set with the minted values and their expiry", () => {
    const answer = deliver(`${OWN} ${MINTED}`);
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual({
      'x-api-key': 'own',
      'chat-token': 'v',
      expires_at: { 'chat-token': 1800000300 },
    });
  });

  it("is the policy's default set for a client without its own", () => {
    expect(JSON.parse(deliver(`c${'b'.repeat(32)} ${MINTED}`).body)['x-api-key']).toBe('default');
    expect(JSON.parse(deliver(`default ${MINTED}`).body)['x-api-key']).toBe('default');
  });

  it('is a 503 with no value when a static value has a minted name, or the name is not a set name', () => {
    for (const set of [`${OWN} {"x-api-key":"minted"}`, `${OWN} not-json`, `../etc ${MINTED}`]) {
      const answer = deliver(set);
      expect(answer.status).toBe(503);
      expect(answer.body).toBe('{"error":"secrets_unavailable"}\n');
    }
  });

  it('merges by name, refusing a collision rather than picking a side', () => {
    expect(mintedSet.merge('{"a":"1"}', '{"b":"2"}')).toBe('{"a":"1","b":"2"}');
    expect(mintedSet.merge('{"expires_at":"x"}', '{"expires_at":{}}')).toBeUndefined();
  });
});
