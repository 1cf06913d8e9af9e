// `npm run test:functional`: a quick check of a RUNNING stack (npm start or docker compose), in the
// spirit of the original study's test: /hello, /secret without a token, /secret with a fresh one (docs/study.md).
// GATE_URL and IDP_URL point it elsewhere; exits non-zero on the first failure.
import { createIdpClient } from '../stack/idp-client.js';

const gate = (process.env.GATE_URL ?? 'http://127.0.0.1:8080').replace(/\/+$/, '');
const issuer = (process.env.IDP_URL ?? 'http://127.0.0.1:8081').replace(/\/+$/, '');

interface Check {
  readonly name: string;
  run(): Promise<string>;
}

async function get(
  path: string,
  token?: string,
): Promise<{ status: number; body: string; headers: Headers }> {
  const response = await fetch(`${gate}${path}`, {
    headers: token ? { authorization: `Bearer ${token}` } : {},
    signal: AbortSignal.timeout(10_000),
  });
  return { status: response.status, body: await response.text(), headers: response.headers };
}

function expectStatus(actual: number, expected: number): void {
  if (actual !== expected) throw new Error(`expected ${expected}, got ${actual}`);
}

const checks: Check[] = [
  {
    name: 'GET /hello answers 200 without a token',
    async run() {
      const answer = await get('/hello');
      expectStatus(answer.status, 200);
      return answer.body.trim();
    },
  },
  {
    name: 'GET /secret without a token answers 401 with a Bearer challenge and no secret',
    async run() {
      const answer = await get('/secret');
      expectStatus(answer.status, 401);
      if (!/^Bearer /.test(answer.headers.get('www-authenticate') ?? ''))
        throw new Error('no Bearer challenge');
      if (/api-key/i.test(answer.body)) throw new Error('the 401 body carries a secret');
      return answer.body.trim();
    },
  },
  {
    name: 'GET /secret with a fresh spa-demo token answers 200 with its secret set',
    async run() {
      const token = await createIdpClient(issuer).requestToken('spa-demo', 'secrets:read');
      const answer = await get('/secret', token);
      expectStatus(answer.status, 200);
      const set = JSON.parse(answer.body) as Record<string, unknown>;
      if (Object.keys(set).length === 0) throw new Error('empty secret set');
      return `keys: ${Object.keys(set).join(', ')}`;
    },
  },
];

async function main(): Promise<void> {
  console.log(`functional check of ${gate} (IdP ${issuer})`);
  for (const check of checks) {
    try {
      const detail = await check.run();
      console.log(`  ok    ${check.name} — ${detail}`);
    } catch (error) {
      console.error(`  FAIL  ${check.name}: ${(error as Error).message}`);
      console.error('\nFAILED (is the stack running? start it with: npm start)');
      process.exit(1);
    }
  }
  console.log('\n==================== DONE: all functional checks passed ====================');
}

void main();
