// Faults around signing keys under steady load: a rotation at the IdP, and a flood of tokens with
// random `kid`s that tries to turn the verifier into a JWKS-fetch amplifier.
import { generateKeyPairSync } from 'node:crypto';
import {
  JWKS_COOLDOWN_S,
  JWKS_REFRESH_S,
  failures,
  forgeToken,
  sleep,
  validLoad,
  validTokens,
  type ChaosContext,
  type Verdict,
} from './chaos-kit.js';
import { formatStatuses, startLoad } from './load.js';

/**
 * Rotate the IdP's signing key with the previous one still published, then rotate again dropping
 * the key just introduced. Expected: a token from the new key passes on its first request; old
 * (cached) tokens keep passing while their key is published; once a key leaves the JWKS its
 * tokens — cached decisions included — are refused within one refresh plus one cooldown.
 */
export async function rotateSigningKey(ctx: ChaosContext): Promise<Verdict> {
  const { gate, timing } = ctx;
  const old = await validTokens(gate, 20);
  let n = 0;
  const load = validLoad(ctx, () => old[n++ % old.length]!, 'old-key');
  await sleep(timing.settle * 1000);
  const { kid } = await gate.stack.idp.rotateKey({ keepPrevious: true });
  const fresh = await gate.stack.mintToken();
  gate.watch.recordToken(fresh);
  const first = await gate.send({
    path: '/secret',
    headers: { authorization: `Bearer ${fresh}` },
    label: 'new-key token',
    earned: true,
  });
  await sleep(timing.settle * 1000);
  const oldLoad = await load.stop();

  // Retire the key `fresh` was signed with (the active one): its cached decision must go too.
  await gate.stack.idp.rotateKey({ keepPrevious: false });
  const retiredAt = Date.now();
  let refusedAfter = Infinity;
  const deadline = retiredAt + (JWKS_REFRESH_S + JWKS_COOLDOWN_S + 5) * 1000;
  while (Date.now() < deadline) {
    const answer = await gate.send({
      path: '/secret',
      headers: { authorization: `Bearer ${fresh}` },
      label: 'retired-key token',
      // Until the verifier notices the retirement the token is still a valid one.
      earned: true,
    });
    if (answer.status === 401) {
      refusedAfter = (Date.now() - retiredAt) / 1000;
      break;
    }
    await sleep(250);
  }
  return {
    scenario: 'signing key rotated, then retired',
    pass:
      first.status === 200 &&
      failures(oldLoad) === 0 &&
      refusedAfter <= JWKS_REFRESH_S + JWKS_COOLDOWN_S + 2,
    figures: [
      `new kid ${kid.slice(0, 12)}…: first request ${first.status}`,
      `old-key tokens while published: ${oldLoad.total} (${formatStatuses(oldLoad.byStatus)})`,
      `new key retired: its cached token refused after ${refusedAfter === Infinity ? 'never' : `${refusedAfter.toFixed(1)} s`} (refresh ${JWKS_REFRESH_S} s)`,
    ],
  };
}

/**
 * A flood of correctly shaped tokens for the real issuer, each with a new random `kid`, beside
 * valid traffic. Expected: at most one JWKS fetch per cooldown (plus scheduled refreshes), and
 * zero failures for valid tokens.
 */
export async function randomKidFlood(ctx: ChaosContext): Promise<Verdict> {
  const { gate, timing } = ctx;
  const tokens = await validTokens(gate, 20);
  const pem = generateKeyPairSync('rsa', { modulusLength: 2048 })
    .privateKey.export({ format: 'pem', type: 'pkcs8' })
    .toString();
  // Forging is the slow part (an RSA signature each), so a pool is signed up front.
  const pool = Array.from({ length: 500 }, () =>
    forgeToken(pem, gate.stack.urls.issuer, `kid-${Math.random().toString(36).slice(2)}`),
  );
  for (const token of pool.slice(0, 20)) gate.watch.recordToken(token);
  let f = 0;
  let n = 0;
  await sleep(JWKS_COOLDOWN_S * 1000); // start with the cooldown clear, as an attacker would
  const before = await gate.stack.idp.stats();
  const started = Date.now();
  const flood = startLoad({
    name: 'random-kid',
    url: gate.stack.urls.secret,
    concurrency: timing.concurrency,
    headers: () => ({ authorization: `Bearer ${pool[f++ % pool.length]!}` }),
    secretValues: gate.canaries.values,
  });
  const load = validLoad(ctx, () => tokens[n++ % tokens.length]!);
  await sleep(timing.kidFlood * 1000);
  const attack = await flood.stop();
  const valid = await load.stop();
  const seconds = (Date.now() - started) / 1000;
  const after = await gate.stack.idp.stats();
  const fetches = after.jwksFetches - before.jwksFetches;
  const allowed = Math.ceil(seconds / JWKS_COOLDOWN_S) + Math.ceil(seconds / JWKS_REFRESH_S);
  return {
    scenario: 'random-kid flood',
    pass:
      fetches <= allowed &&
      failures(valid) === 0 &&
      attack.withSecret === 0 &&
      (attack.byStatus['200'] ?? 0) === 0,
    figures: [
      `${attack.total} forged tokens in ${seconds.toFixed(1)} s (${formatStatuses(attack.byStatus)})`,
      `JWKS fetches ${fetches} (bound ${allowed}: one per ${JWKS_COOLDOWN_S} s cooldown + refreshes)`,
      `valid ${valid.total} (${formatStatuses(valid.byStatus)})`,
    ],
  };
}
