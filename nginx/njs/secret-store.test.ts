import { describe, expect, it } from 'vitest';
import secretStore from './secret-store.js';

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
  const store = storeOf(secretStore.storeFromFile(file));

  it.each([
    ['spa-demo', { 'x-api-key': 'spa-key', 'api-base': 'https://api.example.test' }],
    ['partner-app', { 'x-api-key': 'partner-key' }],
    ['not-listed', { 'x-api-key': 'default-key' }],
    ['', { 'x-api-key': 'default-key' }],
    [undefined, { 'x-api-key': 'default-key' }],
  ])('client %j gets its own set, else the default set', (clientId, expected) => {
    expect(secretStore.selectSecretSet(store, clientId)).toEqual(expected);
  });

  it.each(['__proto__', 'constructor', 'toString', 'hasOwnProperty'])(
    'a client id naming an inherited property (%s) gets the default set, never an Object internal',
    (clientId) => {
      expect(secretStore.selectSecretSet(store, clientId)).toEqual({ 'x-api-key': 'default-key' });
    },
  );
});

describe('storeFromFile', () => {
  it('accepts a file with only a default set, or only clients (then the default set is empty)', () => {
    expect(storeOf(secretStore.storeFromFile({ default: { a: '1' } }))).toEqual({
      default: { a: '1' },
      clients: {},
    });
    expect(storeOf(secretStore.storeFromFile({ clients: { c: { a: '1' } } }))).toEqual({
      default: {},
      clients: { c: { a: '1' } },
    });
  });

  it.each([
    [undefined, 'secrets file must hold a JSON object'],
    [[1, 2], 'secrets file must hold a JSON object'],
    ['text', 'secrets file must hold a JSON object'],
    [{ 'x-api-key': 'flat' }, 'secrets file needs a "default" set, a "clients" map, or both'],
    [{ default: 'key' }, 'secrets file "default" must be a JSON object'],
    [{ clients: [] }, 'secrets file "clients" must be a JSON object'],
    [{ clients: { c: 'key' } }, 'secrets file "clients" entries must be JSON objects'],
  ])('rejects %j with a problem that names the mistake', (input, problem) => {
    expect(secretStore.storeFromFile(input)).toEqual({ problem });
  });

  it('never quotes a secret value in its problem text', () => {
    const result = secretStore.storeFromFile({ 'x-api-key': 'do-not-print-me' });
    expect(JSON.stringify(result)).not.toContain('do-not-print-me');
  });
});

describe('resolveStore: the SECRETS variable of the original study', () => {
  it('replaces the file with its flat object, handed to every client', () => {
    const store = storeOf(secretStore.resolveStore(file, '{"mysupersecretkey":"123123123"}'));
    expect(secretStore.selectSecretSet(store, 'spa-demo')).toEqual({
      mysupersecretkey: '123123123',
    });
    expect(secretStore.selectSecretSet(store, undefined)).toEqual({
      mysupersecretkey: '123123123',
    });
  });

  it('is ignored when unset or empty', () => {
    expect(storeOf(secretStore.resolveStore(file, undefined)).clients).toEqual(file.clients);
    expect(storeOf(secretStore.resolveStore(file, '')).clients).toEqual(file.clients);
  });

  it.each([
    ['{not json', 'SECRETS is not valid JSON'],
    ['["a"]', 'SECRETS must be a flat JSON object'],
    ['"a string"', 'SECRETS must be a flat JSON object'],
    ['null', 'SECRETS must be a flat JSON object'],
  ])('reports %j as a problem without echoing it', (text, problem) => {
    expect(secretStore.resolveStore(file, text)).toEqual({ problem });
  });
});
