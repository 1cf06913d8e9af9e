import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import secretSets from './secret-sets.js';

const ISS_A = 'https://idp-a.example';
const ISS_B = 'https://idp-b.example';

const file = {
  default: { 'x-api-key': 'default-key' },
  clients: {
    'spa-demo': { 'x-api-key': 'spa-key', 'api-base': 'https://api.example.test' },
    'partner-app': { 'x-api-key': 'partner-key' },
  },
};

type Store = { default: unknown; sets: { name: string; set: unknown }[] };

function storeOf(result: ReturnType<typeof secretSets.resolveStore>): Store {
  if ('problem' in result) throw new Error(`unexpected problem: ${result.problem}`);
  return result.store;
}

const storeFromFile = (input: unknown, clientsIssuer?: string) =>
  secretSets.resolveStore(input, undefined, clientsIssuer);

/**
 * The set NGINX serves a caller: the file of the set the verifier names (a digest of issuer and
 * client id, the same as setName) when the store has it, else the default set.
 */
function selectSecretSet(store: Store, issuer: string | undefined, clientId: string | undefined) {
  const name = issuer && clientId ? secretSets.setName(issuer, clientId) : undefined;
  return store.sets.find((entry) => entry.name === name)?.set ?? store.default;
}

describe('the set a caller is served', () => {
  const store = storeOf(storeFromFile(file, ISS_A));

  it.each([
    ['spa-demo', { 'x-api-key': 'spa-key', 'api-base': 'https://api.example.test' }],
    ['partner-app', { 'x-api-key': 'partner-key' }],
    ['not-listed', { 'x-api-key': 'default-key' }],
    ['', { 'x-api-key': 'default-key' }],
    [undefined, { 'x-api-key': 'default-key' }],
  ])(
    'client %j of the secrets issuer gets its own set, else the default set',
    (clientId, expected) => {
      expect(selectSecretSet(store, ISS_A, clientId)).toEqual(expected);
    },
  );

  it("a client of another issuer with the same id gets the default set, never the first issuer's", () => {
    expect(selectSecretSet(store, ISS_B, 'spa-demo')).toEqual({
      'x-api-key': 'default-key',
    });
    expect(selectSecretSet(store, undefined, 'spa-demo')).toEqual({
      'x-api-key': 'default-key',
    });
  });

  it.each(['__proto__', 'constructor', 'toString', 'hasOwnProperty'])(
    'a client id or issuer naming an inherited property (%s) gets the default set, never an Object internal',
    (name) => {
      expect(selectSecretSet(store, ISS_A, name)).toEqual({
        'x-api-key': 'default-key',
      });
      expect(selectSecretSet(store, name, 'spa-demo')).toEqual({
        'x-api-key': 'default-key',
      });
    },
  );

  it('sets under "issuers" belong to their issuer only', () => {
    const scoped = storeOf(
      storeFromFile({
        default: { k: 'default' },
        issuers: { [ISS_A]: { 'shop-spa': { k: 'a' } }, [ISS_B]: { 'shop-spa': { k: 'b' } } },
      }),
    );
    expect(selectSecretSet(scoped, ISS_A, 'shop-spa')).toEqual({ k: 'a' });
    expect(selectSecretSet(scoped, ISS_B, 'shop-spa')).toEqual({ k: 'b' });
    expect(selectSecretSet(scoped, 'https://idp-c.example', 'shop-spa')).toEqual({
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
          const result = storeFromFile(input, ISS_A);
          if ('problem' in result) return;
          const got = selectSecretSet(result.store, ISS_B, clientId) as {
            owner?: string;
          };
          expect(got.owner).not.toBe('A');
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('the secrets file', () => {
  it('accepts a file with only a default set, or only clients (then the default set is empty)', () => {
    expect(storeOf(storeFromFile({ default: { a: '1' } }))).toEqual({
      default: { a: '1' },
      sets: [],
    });
    expect(storeOf(storeFromFile({ clients: { c: { a: '1' } } }, ISS_A))).toEqual({
      default: {},
      sets: [{ name: secretSets.setName(ISS_A, 'c'), set: { a: '1' } }],
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
    expect(storeFromFile(input, ISS_A)).toEqual({ problem });
  });

  it('refuses a flat "clients" map with no issuer to own it: client ids are unique only per issuer', () => {
    expect(storeFromFile(file, '')).toEqual({
      problem:
        'secrets file "clients" is ambiguous: client ids are unique only within one issuer; set SG_SECRETS_ISSUER or move them under "issuers"',
    });
  });

  it('refuses a client id listed both flat and under the same issuer', () => {
    const twice = { clients: { c: { k: '1' } }, issuers: { [ISS_A]: { c: { k: '2' } } } };
    expect(storeFromFile(twice, ISS_A)).toEqual({
      problem: 'secrets file lists a client id both in "clients" and under its issuer',
    });
  });

  it('never quotes a secret value in its problem text', () => {
    const result = storeFromFile({ 'x-api-key': 'do-not-print-me' });
    expect(JSON.stringify(result)).not.toContain('do-not-print-me');
  });
});

describe('resolveStore: the SECRETS variable of the original study', () => {
  it('replaces the file with its flat object, handed to every client of every issuer', () => {
    const store = storeOf(secretSets.resolveStore(file, '{"mysupersecretkey":"123123123"}', ''));
    for (const [iss, client] of [
      [ISS_A, 'spa-demo'],
      [ISS_B, 'spa-demo'],
      [undefined, undefined],
    ] as const) {
      expect(selectSecretSet(store, iss, client)).toEqual({
        mysupersecretkey: '123123123',
      });
    }
  });

  it('is ignored when unset or empty', () => {
    for (const envText of [undefined, '']) {
      const store = storeOf(secretSets.resolveStore(file, envText, ISS_A));
      expect(selectSecretSet(store, ISS_A, 'partner-app')).toEqual(file.clients['partner-app']);
    }
  });

  it.each([
    ['{not json', 'SECRETS is not valid JSON'],
    ['["a"]', 'SECRETS must be a flat JSON object'],
    ['"a string"', 'SECRETS must be a flat JSON object'],
    ['null', 'SECRETS must be a flat JSON object'],
  ])('reports %j as a problem without echoing it', (text, problem) => {
    expect(secretSets.resolveStore(file, text, ISS_A)).toEqual({ problem });
  });
});
