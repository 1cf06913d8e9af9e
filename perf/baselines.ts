// Starts the comparison gates of stresstest/baselines/ as fresh processes: the study's njs and
// Node.js gates (each with the stock-NGINX user-info endpoint they call) and njs verifying RS256.
// The study: docs/study.md.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../stack/ports.js';
import type { Confinement } from './limits.js';
import { prepareNginxPrefix } from './nginx-prefix.js';
import { startService, type RunningService } from './service.js';

const BASELINES = fileURLToPath(new URL('../stresstest/baselines/', import.meta.url));

/** The secrets every baseline hands out, in the study's flat `SECRETS` format. */
export const BASELINE_SECRETS = '{"x-api-key":"stress-demo-api-key"}';

export type BaselineName = 'study-njs' | 'study-node' | 'njs-verify';
export const BASELINE_NAMES: readonly BaselineName[] = ['study-njs', 'study-node', 'njs-verify'];

export interface BaselineContext {
  /** Scratch directory for prefixes and logs of this start. */
  readonly dir: string;
  readonly confinement: Confinement;
  /** Issuer and audience the njs verifier checks; its RS256 key as base64 SPKI DER. */
  readonly issuer: string;
  readonly audience: string;
  readonly spki: string;
}

export interface StartedGate {
  readonly baseUrl: string;
  /** Every process started, the gate first. */
  readonly services: readonly RunningService[];
  stop(): Promise<void>;
}

async function startNginx(
  ctx: BaselineContext,
  name: string,
  template: string,
  env: Record<string, string>,
  limited: boolean,
  readyPath: string,
): Promise<{ service: RunningService; url: string }> {
  const port = await freePort();
  const prefix = prepareNginxPrefix(join(ctx.dir, name), join(BASELINES, template), {
    LISTEN: `127.0.0.1:${port}`,
    HERE: join(BASELINES, template, '..'),
  });
  const url = `http://127.0.0.1:${port}`;
  const service = await startService(
    {
      name,
      command: { command: 'nginx', args: prefix.args },
      env,
      limited,
      readyUrl: url + readyPath,
      logFile: join(ctx.dir, `${name}.log`),
    },
    ctx.confinement,
  );
  return { service, url };
}

/** The study's user-info endpoint: stock NGINX answering 200, pinned but not limited (support). */
function startUserinfo(ctx: BaselineContext) {
  return startNginx(ctx, 'userinfo', 'userinfo/nginx.conf.template', {}, false, '/userinfo');
}

function gate(baseUrl: string, services: RunningService[]): StartedGate {
  return {
    baseUrl,
    services,
    async stop() {
      for (const service of services) await service.stop();
    },
  };
}

async function startStudyNjs(ctx: BaselineContext): Promise<StartedGate> {
  const userinfo = await startUserinfo(ctx);
  const env = { SECRETS: BASELINE_SECRETS, USERINFO_URL: `${userinfo.url}/userinfo` };
  const front = await startNginx(
    ctx,
    'study-njs',
    'study-njs/nginx.conf.template',
    env,
    true,
    '/hello',
  );
  return gate(front.url, [front.service, userinfo.service]);
}

async function startStudyNode(ctx: BaselineContext): Promise<StartedGate> {
  const userinfo = await startUserinfo(ctx);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const service = await startService(
    {
      name: 'study-node',
      command: { command: process.execPath, args: [join(BASELINES, 'study-node/server.mjs')] },
      env: {
        PORT: String(port),
        SECRETS: BASELINE_SECRETS,
        USERINFO_URL: `${userinfo.url}/userinfo`,
      },
      limited: true,
      readyUrl: `${url}/hello`,
      logFile: join(ctx.dir, 'study-node.log'),
    },
    ctx.confinement,
  );
  return gate(url, [service, userinfo.service]);
}

async function startNjsVerify(ctx: BaselineContext): Promise<StartedGate> {
  const env = {
    SECRETS: BASELINE_SECRETS,
    NJS_VERIFY_SPKI: ctx.spki,
    NJS_VERIFY_ISSUER: ctx.issuer,
    NJS_VERIFY_AUDIENCE: ctx.audience,
  };
  const front = await startNginx(
    ctx,
    'njs-verify',
    'njs-verify/nginx.conf.template',
    env,
    true,
    '/hello',
  );
  return gate(front.url, [front.service]);
}

const STARTERS: Readonly<Record<BaselineName, (ctx: BaselineContext) => Promise<StartedGate>>> = {
  'study-njs': startStudyNjs,
  'study-node': startStudyNode,
  'njs-verify': startNjsVerify,
};

/** Starts one baseline with fresh processes; the caller stops it. */
export function startBaseline(name: BaselineName, ctx: BaselineContext): Promise<StartedGate> {
  return STARTERS[name](ctx);
}
