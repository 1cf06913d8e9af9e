// What every container suite needs first: testcontainers' settings for a local engine without a
// registry, whether an engine answers at all (suites skip, visibly, only when none does), and the
// project's images, built once from docker-compose.yaml and reused by every suite.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../../stack/start-stack.js';

// Ryuk (testcontainers' reaper) is an image to pull, and nothing can be pulled here: every suite
// removes its own containers and networks instead. On a local engine the published ports are on
// this machine's loopback; without the override testcontainers, seeing /.dockerenv, would look
// for them on the bridge gateway. Both are what .ci/run exports; set here for a direct vitest run.
process.env.TESTCONTAINERS_RYUK_DISABLED ??= 'true';
if (!process.env.DOCKER_HOST) process.env.TESTCONTAINERS_HOST_OVERRIDE ??= '127.0.0.1';

const run = promisify(execFile);

// A tag per checkout (docker-compose.yaml reads SECRET_GATE_TAG): suites of two checkouts running
// at once on one engine never swap images under each other. Layers are shared, so it costs a tag.
export const IMAGE_TAG =
  process.env.SECRET_GATE_TAG ??
  `test-${createHash('sha256').update(REPO_ROOT).digest('hex').slice(0, 10)}`;
process.env.SECRET_GATE_TAG = IMAGE_TAG;

/** The images docker-compose.yaml builds, by service. */
export const IMAGES = Object.freeze({
  idp: `secret-gate-idp:${IMAGE_TAG}`,
  verifier: `secret-gate-verifier:${IMAGE_TAG}`,
  nginx: `secret-gate-nginx:${IMAGE_TAG}`,
});

/** Why no container engine can be used, or undefined when one answers. */
export async function missingEngine(): Promise<string | undefined> {
  try {
    await run('docker', ['info', '--format', '{{.ServerVersion}}'], { timeout: 20_000 });
    return undefined;
  } catch (error) {
    const { stderr, message } = error as { stderr?: string; message: string };
    return (stderr?.trim() || message).split('\n')[0];
  }
}

/**
 * `docker compose build` of every image, or of the `services` named: every layer is cached after
 * the first build (.ci/run builds before the suites start), so a suite pays a few seconds here.
 */
export async function buildImages(services: readonly (keyof typeof IMAGES)[] = []): Promise<void> {
  await run('docker', ['compose', '-f', 'docker-compose.yaml', 'build', '--quiet', ...services], {
    cwd: REPO_ROOT,
    env: { ...process.env, SECRET_GATE_TAG: IMAGE_TAG },
    timeout: 600_000,
    maxBuffer: 16 * 1024 * 1024,
  });
}

/** `docker <args>`, its stdout trimmed. */
export async function docker(...args: string[]): Promise<string> {
  const { stdout } = await run('docker', args, { timeout: 60_000, maxBuffer: 16 * 1024 * 1024 });
  return stdout.trim();
}
