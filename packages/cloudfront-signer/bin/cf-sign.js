#!/usr/bin/env node
// The `cf-sign` bin: runs the compiled command from dist (`npm run build:cloudfront-signer` at the
// repository root builds it). It lives outside dist so that npm links it at install time, before
// anything is built; `npm run cf-sign -- …` runs the same command from its sources.
import process from 'node:process';

try {
  await import('../dist/cli/main.js');
} catch (error) {
  // Only the missing build itself is explained; anything else is a real failure and is rethrown.
  if (error?.code !== 'ERR_MODULE_NOT_FOUND' || !String(error.message).includes('dist/cli/main.js'))
    throw error;
  process.stderr.write(
    'cf-sign: not built yet; run `npm run build:cloudfront-signer` (or `npm run cf-sign -- …`)\n',
  );
  process.exitCode = 2;
}
