import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseConfig } from './config.js';

const ORIGIN = 'https://app.example.com';
const valid = {
  issuer: 'http://127.0.0.1:8081',
  clientId: 'spa-demo',
  scope: 'openid profile secrets:read',
  audience: 'secret-gate-api',
};

function problemsOf(json: unknown): readonly string[] {
  try {
    parseConfig(json, ORIGIN);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

function jsonResponse(body: string, status = 200): Response {
  return new Response(body, { status, headers: { 'Content-Type': 'application/json' } });
}

describe('parseConfig', () => {
  it('accepts the dev IdP configuration and freezes it', () => {
    const config = parseConfig(valid, ORIGIN);
    expect(config.issuer.href).toBe('http://127.0.0.1:8081/');
    expect(config.clientId).toBe('spa-demo');
    expect(config.scope).toBe('openid profile secrets:read');
    expect(config.audience).toBe('secret-gate-api');
    expect(config.cloudfront).toBeUndefined();
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('names the API with the RFC 8707 resource parameter unless told otherwise', () => {
    expect(parseConfig(valid, ORIGIN).audienceParameters).toEqual(['resource']);
  });

  it('offers no named set unless told, and reads a space-separated list', () => {
    expect(parseConfig(valid, ORIGIN).secretSets).toEqual([]);
    expect(
      parseConfig({ ...valid, secretSets: ' payments  admin payments' }, ORIGIN).secretSets,
    ).toEqual(['payments', 'admin']);
  });

  it.each([['../etc'], ['pay ments/x'], [['payments']], ['a%2Fb']])(
    'refuses secretSets %j',
    (secretSets) => {
      expect(problemsOf({ ...valid, secretSets })).toEqual([
        '"secretSets" must be a space-separated list of set names (letters, digits, "-" and "_")',
      ]);
    },
  );

  it.each([
    ['resource', ['resource']],
    ['audience', ['audience']],
    ['resource audience', ['resource', 'audience']],
    ['', []],
  ])('reads audienceParameters "%s" as %j', (audienceParameters, expected) => {
    expect(parseConfig({ ...valid, audienceParameters }, ORIGIN).audienceParameters).toEqual(
      expected,
    );
  });

  it.each([['aud'], [['resource']], ['resource scope']])(
    'refuses audienceParameters %j',
    (audienceParameters) => {
      expect(problemsOf({ ...valid, audienceParameters })).toEqual([
        '"audienceParameters" must list "resource" and/or "audience" (space-separated)',
      ]);
    },
  );

  it('keeps an https issuer path exactly (discovery appends to it)', () => {
    const config = parseConfig(
      { ...valid, issuer: 'https://login.example.com/realms/demo' },
      ORIGIN,
    );
    expect(config.issuer.href).toBe('https://login.example.com/realms/demo');
  });

  it('resolves a relative CloudFront image path against the app origin', () => {
    const config = parseConfig({ ...valid, cloudfront: { imageUrl: '/private/cat.png' } }, ORIGIN);
    expect(config.cloudfront?.imageUrl.href).toBe('https://app.example.com/private/cat.png');
  });

  it('accepts an absolute CloudFront image URL', () => {
    const imageUrl = 'https://d111111abcdef8.cloudfront.net/private/cat.png';
    const config = parseConfig({ ...valid, cloudfront: { imageUrl } }, ORIGIN);
    expect(config.cloudfront?.imageUrl.href).toBe(imageUrl);
  });

  it('treats a null cloudfront entry as not configured', () => {
    expect(parseConfig({ ...valid, cloudfront: null }, ORIGIN).cloudfront).toBeUndefined();
  });

  it.each([
    ['an array', []],
    ['a string', 'config'],
    ['null', null],
  ])('rejects %s as the document', (_name, json) => {
    expect(problemsOf(json)).toEqual(['the document must be a JSON object']);
  });

  it('reports every problem at once, naming each field', () => {
    expect(problemsOf({ issuer: 42, clientId: '', scope: 'profile', cloudfront: 'yes' })).toEqual([
      '"issuer" must be a non-empty string',
      '"clientId" must be a non-empty string',
      '"scope" must include "openid" (the ID token names the signed-in user)',
      '"audience" must be a non-empty string',
      '"cloudfront" must be an object',
    ]);
  });

  it.each([
    [
      'plain http to a remote host',
      'http://login.example.com',
      '"issuer" must use https (plain http only on loopback)',
    ],
    ['a relative issuer', '/idp', '"issuer" is not a valid URL'],
    [
      'a query string',
      'https://login.example.com/?tenant=1',
      '"issuer" must not have a query or fragment',
    ],
    [
      'a non-http scheme',
      'javascript:alert(1)',
      '"issuer" must use https (plain http only on loopback)',
    ],
  ])('rejects an issuer with %s', (_name, issuer, problem) => {
    expect(problemsOf({ ...valid, issuer })).toEqual([problem]);
  });

  it('rejects a CloudFront image URL over plain http to a remote host', () => {
    expect(
      problemsOf({ ...valid, cloudfront: { imageUrl: 'http://cdn.example.com/a.png' } }),
    ).toEqual(['"cloudfront.imageUrl" must use https (plain http only on loopback)']);
  });

  it('rejects a cloudfront object without an image URL', () => {
    expect(problemsOf({ ...valid, cloudfront: {} })).toEqual([
      '"cloudfront.imageUrl" must be a non-empty string',
    ]);
  });
});

describe('loadConfig', () => {
  it('fetches /config.json from the origin without caching and parses it', async () => {
    const seen: { url: string; cache: RequestCache | undefined }[] = [];
    const fakeFetch: typeof fetch = async (input, init) => {
      seen.push({ url: input instanceof Request ? input.url : String(input), cache: init?.cache });
      return jsonResponse(JSON.stringify(valid));
    };
    const config = await loadConfig(fakeFetch, ORIGIN);
    expect(config.clientId).toBe('spa-demo');
    expect(seen).toEqual([{ url: 'https://app.example.com/config.json', cache: 'no-store' }]);
  });

  it('reports an HTTP failure with its status', async () => {
    const fakeFetch: typeof fetch = async () => jsonResponse('{}', 404);
    await expect(loadConfig(fakeFetch, ORIGIN)).rejects.toThrow(
      'The app configuration is not usable: /config.json answered HTTP 404',
    );
  });

  it('reports a body that is not JSON', async () => {
    const fakeFetch: typeof fetch = async () => jsonResponse('<html>');
    await expect(loadConfig(fakeFetch, ORIGIN)).rejects.toThrow('/config.json is not valid JSON');
  });

  it('reports an unreachable server', async () => {
    const fakeFetch: typeof fetch = async () => {
      throw new TypeError('Failed to fetch');
    };
    await expect(loadConfig(fakeFetch, ORIGIN)).rejects.toThrow(
      '/config.json could not be reached',
    );
  });

  it('reports invalid fields from the fetched document', async () => {
    const fakeFetch: typeof fetch = async () =>
      jsonResponse(JSON.stringify({ ...valid, audience: 7 }));
    await expect(loadConfig(fakeFetch, ORIGIN)).rejects.toBeInstanceOf(ConfigError);
  });
});
