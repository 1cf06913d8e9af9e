import { readFileSync } from 'node:fs';
import { startStack } from './stack/start-stack.js';
const stack = await startStack({ env: { nginx: { SG_VERIFY_RATE: '1r/m', SG_VERIFY_BURST: '1' } } });
try {
  for (let i = 0; i < 4; i++) {
    const r = await fetch(stack.urls.secret, { headers: { authorization: `Bearer eyJhbGciOiJSUzI1NiJ9.abc${i}.def` } });
    console.log(r.status, r.headers.get('retry-after'), await r.text());
  }
  console.log(readFileSync(stack.files.nginxPrefix + '/logs/error.log', 'utf8').slice(-1500));
} finally { await stack.stop(); }
