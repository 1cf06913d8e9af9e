// `npm run cf-sign -- …`: the cf-sign command as a process (see cf-sign.ts).
import { cfSignMain } from './cf-sign.js';

process.exitCode = await cfSignMain(process.argv.slice(2), {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
});
