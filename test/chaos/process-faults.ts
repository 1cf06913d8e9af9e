// Faults of whole processes under steady load: the verifier killed and restarted, the IdP stopped,
// NGINX reloaded. Each runs valid traffic and invalid probes throughout and returns a verdict.
import {
  JWKS_COOLDOWN_S,
  failures,
  probeLoad,
  sleep,
  validLoad,
  validTokens,
  type ChaosContext,
  type Verdict,
} from './chaos-kit.js';
import { formatStatuses, summarize } from './load.js';

/**
 * SIGKILL the verifier, keep it down for `verifierGap`, start it again. Expected: only 503s
 * (fail closed) in the gap, never a secret to an invalid token, 200s again within 2 s of the
 * restart.
 */
export async function killAndRestartVerifier(ctx: ChaosContext): Promise<Verdict> {
  const { gate, timing } = ctx;
  const tokens = await validTokens(gate, 20);
  let n = 0;
  const load = validLoad(ctx, () => tokens[n++ % tokens.length]!);
  const probes = probeLoad(ctx);
  await sleep(timing.settle * 1000);
  const killedAt = Date.now() - load.startedAt;
  await gate.stack.stopService('verifier', 'SIGKILL');
  await sleep(timing.verifierGap * 1000);
  const restartAt = Date.now() - load.startedAt;
  await gate.stack.startService('verifier');
  const readyAt = Date.now() - load.startedAt;
  await sleep(timing.settle * 1000);
  const valid = await load.stop();
  const invalid = await probes.stop();

  const gap = summarize('gap', valid.samples, 0, killedAt + 50, restartAt);
  // "Restart" is the verifier being up again (listening with its keys loaded); how long Node takes
  // to get there is reported beside it, since it depends on the machine, not on the gate.
  const firstOk = valid.samples.find((s) => s.at >= readyAt && s.status === 200)?.at;
  const lastBad = [...valid.samples].reverse().find((s) => s.status !== 200)?.at ?? 0;
  const recoveryMs = firstOk === undefined ? Infinity : firstOk - readyAt;
  const gapStatuses = Object.keys(gap.byStatus).filter((s) => s !== '200');
  const pass =
    invalid.withSecret === 0 &&
    gapStatuses.every((s) => s === '503') &&
    recoveryMs <= 2000 &&
    lastBad <= readyAt + 2000 &&
    valid.samples.every((s) => s.status !== 500);
  return {
    scenario: 'verifier killed and restarted',
    pass,
    figures: [
      `gap ${((restartAt - killedAt) / 1000).toFixed(1)} s: ${formatStatuses(gap.byStatus) || 'no requests'}`,
      `process start to ready ${readyAt - restartAt} ms; first 200 ${recoveryMs} ms after ready, last failure ${Math.max(0, lastBad - readyAt)} ms after`,
      `valid ${valid.total} (${formatStatuses(valid.byStatus)}), ${valid.retried ?? 0} retried once after a connection reset`,
      `invalid probes ${invalid.total}, secrets ${invalid.withSecret}`,
    ],
  };
}

/**
 * Stop the IdP for `idpOutage` seconds while valid tokens — most never seen before, so they need
 * the held key set rather than the decision cache — keep coming. Expected: zero failures. The dev
 * IdP makes new keys when it starts again, so the load stops before the restart and a fresh token
 * must then pass within one cooldown (the verifier fetches the new key set for an unknown `kid`).
 */
export async function stopIdp(ctx: ChaosContext): Promise<Verdict> {
  const { gate, timing } = ctx;
  const tokens = await validTokens(gate, 400);
  let n = 0;
  const load = validLoad(ctx, () => tokens[n++ % tokens.length]!);
  const probes = probeLoad(ctx);
  await sleep(timing.settle * 1000);
  await gate.stack.stopService('idp');
  const stoppedAt = Date.now();
  await sleep(timing.idpOutage * 1000);
  const valid = await load.stop();
  const invalid = await probes.stop();
  const ready = await fetch(`${gate.stack.urls.verifier}/readyz`).then((r) => r.status);
  const outage = (Date.now() - stoppedAt) / 1000;
  await gate.stack.startService('idp');
  const fresh = await gate.stack.mintToken();
  gate.watch.recordToken(fresh);
  // Its new kid makes the verifier refetch the key set, at most once per cooldown: a failed fetch
  // during the outage may have started one just before the restart.
  const restartedAt = Date.now();
  let after: Awaited<ReturnType<typeof gate.send>>;
  do {
    after = await gate.send({
      path: '/secret',
      headers: { authorization: `Bearer ${fresh}` },
      label: 'token after IdP restart',
      earned: true,
    });
    if (after.status === 200) break;
    await sleep(250);
  } while (Date.now() - restartedAt < (JWKS_COOLDOWN_S + 2) * 1000);
  const passedAfter = (Date.now() - restartedAt) / 1000;
  return {
    scenario: `IdP stopped for ${outage.toFixed(0)} s`,
    pass:
      failures(valid) === 0 && invalid.withSecret === 0 && ready === 200 && after.status === 200,
    figures: [
      `valid ${valid.total} (${formatStatuses(valid.byStatus)}), ${tokens.length} distinct tokens`,
      `verifier /readyz during the outage: ${ready}; token from the restarted IdP: ${after.status} after ${passedAfter.toFixed(1)} s (cooldown ${JWKS_COOLDOWN_S} s)`,
      `invalid probes ${invalid.total}, secrets ${invalid.withSecret}`,
    ],
  };
}

/** Three graceful NGINX reloads (SIGHUP) under load. Expected: zero failures. */
export async function reloadNginx(ctx: ChaosContext): Promise<Verdict> {
  const { gate, timing } = ctx;
  const tokens = await validTokens(gate, 20);
  let n = 0;
  const load = validLoad(ctx, () => tokens[n++ % tokens.length]!);
  const probes = probeLoad(ctx);
  await sleep(timing.settle * 1000);
  const reloads = 3;
  for (let i = 0; i < reloads; i++) {
    gate.reloadNginx();
    await sleep(Math.max(500, (timing.settle * 1000) / 2));
  }
  await sleep(timing.settle * 1000);
  const valid = await load.stop();
  const invalid = await probes.stop();
  return {
    scenario: `NGINX reloaded ${reloads} times`,
    pass: failures(valid) === 0 && invalid.withSecret === 0,
    figures: [
      `valid ${valid.total} (${formatStatuses(valid.byStatus)}), ${valid.retried ?? 0} retried once after a connection reset`,
      `invalid probes ${invalid.total}, secrets ${invalid.withSecret}`,
    ],
  };
}
