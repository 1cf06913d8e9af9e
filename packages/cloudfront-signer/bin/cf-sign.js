#!/usr/bin/env node
// The `cf-sign` bin: runs the compiled command from dist (`npm run build:cloudfront-signer` at the
// repository root builds it). It lives outside dist so that npm links it at install time, before
// anything is built; `npm run cf-sign -- …` runs the same command from its sources.
import '../dist/cli/main.js';
