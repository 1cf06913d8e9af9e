import { describe, expect, it } from 'vitest';
import { createFakeRequest } from './fake-request.js';
import runtimeConfig from './runtime-config.js';

describe('runtime-config (/config.json)', () => {
  it('answers the SPA its OIDC settings from the location variables', () => {
    const r = createFakeRequest({
      sg_oidc_issuer: 'http://127.0.0.1:8081',
      sg_oidc_client_id: 'spa-demo',
      sg_oidc_scope: 'openid secrets:read',
      sg_oidc_audience: 'secret-gate-api',
    });
    runtimeConfig.respond(r);
    expect(r.status).toBe(200);
    expect(r.headersOut['Content-Type']).toBe('application/json');
    expect(JSON.parse(r.body ?? '')).toEqual({
      issuer: 'http://127.0.0.1:8081',
      clientId: 'spa-demo',
      scope: 'openid secrets:read',
      audience: 'secret-gate-api',
    });
  });

  it('escapes values as JSON and turns missing ones into empty strings', () => {
    const r = createFakeRequest({ sg_oidc_issuer: 'https://idp.example.test/a\\b</script>' });
    runtimeConfig.respond(r);
    expect(JSON.parse(r.body ?? '')).toEqual({
      issuer: 'https://idp.example.test/a\\b</script>',
      clientId: '',
      scope: '',
      audience: '',
    });
  });

  it('names the private CloudFront image only when one is configured', () => {
    const image = 'https://cdn.example.test/private/logo.png';
    const withImage = createFakeRequest({ sg_cloudfront_image_url: image });
    runtimeConfig.respond(withImage);
    expect(JSON.parse(withImage.body ?? '').cloudfront).toEqual({ imageUrl: image });

    const without = createFakeRequest({ sg_cloudfront_image_url: '' });
    runtimeConfig.respond(without);
    expect(JSON.parse(without.body ?? '')).not.toHaveProperty('cloudfront');
  });
});
