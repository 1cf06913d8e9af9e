// Writes the dev IdP's RS256 key as base64 SPKI DER for the njs-verify baseline in
// docker-compose-stress.yaml (njs 0.7.9 cannot import a JWK).
import { createPublicKey } from 'node:crypto';
import { writeFileSync } from 'node:fs';

const issuer = process.env.IDP_ISSUER;
for (let attempt = 0; ; attempt++) {
  try {
    const { keys } = await (await fetch(`${issuer}/jwks`)).json();
    const jwk = keys.find((key) => key.kty === 'RSA');
    const der = createPublicKey({ key: jwk, format: 'jwk' }).export({
      type: 'spki',
      format: 'der',
    });
    writeFileSync('/keys/spki.b64', der.toString('base64'));
    break;
  } catch (error) {
    if (attempt > 60) throw error;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}
