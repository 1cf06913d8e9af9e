import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import secretStore from './secret-store.js';

const ISS_A = 'https://idp-a.example';
const ISS_B = 'https://idp-b.example';

const file = {
  default: { 'x-api-key': 'default-key' },
  clients: {
    'spa-demo': { 'x-api-key': 'spa-key', 'api-base': 'https://api.example.test' },
    'partner-app': { 'x-api-key': 'partner-key' },
  },
};

function storeOf(result: ReturnType<typeof secretStore.resolveStore>) {
  if ('problem' in result) throw new Error(`unexpected problem: ${result.problem}`);
  return result.store;
}

describe('selectSecretSet', () => {
  const store = storeOf(secretStore.storeFromFile(file, ISS_A));

  it.each([
    ['spa-demo', { 'x-api-key': 'spa-key', 'api-base': 'https://api.example.test' }],
    ['partner-app', { 'x-api-key': 'partner-key' }],
    ['not-listed', { 'x-api-key': 'default-key' }],
    ['', { 'x-api-key': 'default-key' }],
    [undefined, { 'x-api-key': 'default-key' }],
  ])(
    'client %j of the secrets issuer gets its own set, else the default set',
    (clientId, expected) => {
      expect(secretStore.selectSecretSet(store, ISS_A, clientId)).toEqual(expected);
    },
  );

  it("a client of another issuer with the same id gets the default set, never the first issuer's", () => {
    expect(secretStore.selectSecretSet(store, ISS_B, 'spa-demo')).toEqual({
      'x-api-key': 'default-key',
    });
    expect(secretStore.selectSecretSet(store, undefined, 'spa-demo')).toEqual({
      'x-api-key': 'default-key',
    });
  });

  it.each(['__proto__', 'constructor', 'toString', 'hasOwnProperty'])(
    'a client id or issuer naming an inherited property (%s) gets the default set, never an Object internal',
    (name) => {
      expect(secretStore.selectSecretSet(store, ISS_A, name)).toEqual({
        'x-api-key': 'default-key',
      });
      expect(secretStore.selectSecretSet(store, name, 'spa-demo')).toEqual({
        'x-api-key': 'default-key',
      });
    },
  );

  it('sets under "issuers" belong to their issuer only', () => {
    const scoped = storeOf(
      secretStore.storeFromFile({
        default: { k: 'default' },
        issuers: { [ISS_A]: { 'shop-spa': { k: 'a' } }, [ISS_B]: { 'shop-spa': { k: 'b' } } },
      }),
    );
    expect(secretStore.selectSecretSet(scoped, ISS_A, 'shop-spa')).toEqual({ k: 'a' });
    expect(secretStore.selectSecretSet(scoped, ISS_B, 'shop-spa')).toEqual({ k: 'b' });
    expect(secretStore.selectSecretSet(scoped, 'https://idp-c.example', 'shop-spa')).toEqual({
      k: 'default',
    });
  });
});

describe('property: no token from issuer B ever receives a set configured for issuer A', () => {
  const id = fc.string({ minLength: 0, maxLength: 12 });
  const sets = fc.dictionary(id, fc.constant(null), { maxKeys: 6 });

  it('holds for any files, client ids and issuers', () => {
    fc.assert(
      fc.property(
        sets,
        sets,
        fc.boolean(),
        fc.oneof(id, fc.constantFrom('shop-spa', '__proto__', 'constructor')),
        (aClients, bClients, flat, clientId) => {
          // Every set is tagged with its owner, so a leak is visible whatever the ids.
          const tag = (owner: string, ids: Record<string, null>) =>
            Object.fromEntries(Object.keys(ids).map((c) => [c, { owner, c }]));
          const aSets = tag('A', aClients);
          const input = {
            default: { owner: 'default' },
            ...(flat ? { clients: aSets } : {}),
            issuers: { ...(flat ? {} : { [ISS_A]: aSets }), [ISS_B]: tag('B', bClients) },
          };
          const result = secretStore.storeFromFile(input, ISS_A);
          if ('problem' in result) return;
          const got = secretStore.selectSecretSet(result.store, ISS_B, clientId) as {
            owner?: string;
          };
          expect(got.owner).not.toBe('A');
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('storeFromFile', () => {
  it('accepts a file with only a default set, or only clients (then the default set is empty)', () => {
    expect(storeOf(secretStore.storeFromFile({ default: { a: '1' } }))).toEqual({
      default: { a: '1' },
      issuers: {},
    });
    expect(storeOf(secretStore.storeFromFile({ clients: { c: { a: '1' } } }, ISS_A))).toEqual({
      default: {},
      issuers: { [ISS_A]: { c: { a: '1' } } },
    });
  });

  it.each([
    [undefined, 'secrets file must hold a JSON object'],
    [[1, 2], 'secrets file must hold a JSON object'],
    ['text', 'secrets file must hold a JSON object'],
    [
      { 'x-api-key': 'flat' },
      'secrets file needs a "default" set, an "issuers" map, a "clients" map, or some of them',
    ],
    [{ default: 'key' }, 'secrets file "default" must be a JSON object'],
    [{ clients: [] }, 'secrets file "clients" must be a JSON object'],
    [{ clients: { c: 'key' } }, 'secrets file "clients" entries must be JSON objects'],
    [{ issuers: [] }, 'secrets file "issuers" must be a JSON object'],
    [
      { issuers: { [ISS_A]: { c: 'key' } } },
      'secrets file "issuers" values entries must be JSON objects',
    ],
  ])('rejects %j with a problem that names the mistake', (input, problem) => {
    expect(secretStore.storeFromFile(input, ISS_A)).toEqual({ problem });
  });

  it('refuses a flat "clients" map with no issuer to own it: client ids are unique only per issuer', () => {
    expect(secretStore.storeFromFile(file, '')).toEqual({
      problem:
        'secrets file "clients" is ambiguous: client ids are unique only within one issuer; set SG_SECRETS_ISSUER or move them under "issuers"',
    });
  });

  it('refuses a client id listed both flat and under the same issuer', () => {
    const twice = { clients: { c: { k: '1' } }, issuers: { [ISS_A]: { c: { k: '2' } } } };
    expect(secretStore.storeFromFile(twice, ISS_A)).toEqual({
      problem: 'secrets file lists a client id both in "clients" and under its issuer',
    });
  });

  it('never quotes a secret value in its problem text', () => {
    const result = secretStore.storeFromFile({ 'x-api-key': 'do-not-print-me' });
    expect(JSON.stringify(result)).not.toContain('do-not-print-me');
  });
});

describe('resolveStore: the SECRETS variable of the original study', () => {
  it('replaces the file with its flat object, handed to every client of every issuer', () => {
    const store = storeOf(secretStore.resolveStore(file, '{"mysupersecretkey":"123123123"}', ''));
    for (const [iss, client] of [
      [ISS_A, 'spa-demo'],
      [ISS_B, 'spa-demo'],
      [undefined, undefined],
    ] as const) {
      expect(secretStore.selectSecretSet(store, iss, client)).toEqual({
        mysupersecretkey: '123123123',
      });
    }
  });

  it('is ignored when unset or empty', () => {
    expect(storeOf(secretStore.resolveStore(file, undefined, ISS_A)).issuers[ISS_A]).toEqual(
      file.clients,
    );
    expect(storeOf(secretStore.resolveStore(file, '', ISS_A)).issuers[ISS_A]).toEqual(file.clients);
  });

  it.each([
    ['{not json', 'SECRETS is not valid JSON'],
    ['["a"]', 'SECRETS must be a flat JSON object'],
    ['"a string"', 'SECRETS must be a flat JSON object'],
    ['null', 'SECRETS must be a flat JSON object'],
  ])('reports %j as a problem without echoing it', (text, problem) => {
    expect(secretStore.resolveStore(file, text, ISS_A)).toEqual({ problem });
  });
});
