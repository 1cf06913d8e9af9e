// The cf-sign command as a process: the `cf-sign` bin runs it from dist, `npm run cf-sign -- …`
// from its sources. See cf-sign.ts.
import { cfSignMain } from './cf-sign.js';

process.exitCode = await cfSignMain(process.argv.slice(2), {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
});
