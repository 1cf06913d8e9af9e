// Entry of the dev IdP (`npm run idp`): reads IDP_* variables, starts the server, prints one
// ready line with the issuer, and exits cleanly on SIGINT/SIGTERM. Never for production.
import { loadIdpConfig } from './config.js';
import { startIdp } from './server.js';

async function main(): Promise<void> {
  let config;
  try {
    config = loadIdpConfig();
  } catch (error) {
    console.error((error as Error).message);
    process.exit(2);
  }
  const idp = await startIdp(config);
  console.log(
    JSON.stringify({
      msg: 'dev idp ready',
      issuer: idp.issuer,
      port: idp.port,
      audience: config.audience,
      clients: config.clients,
      control: config.control ? '/dev/' : 'off',
      signingKid: idp.keys.activeKid,
    }),
  );
  const stop = (signal: string) => {
    console.log(JSON.stringify({ msg: 'dev idp stopping', signal }));
    void idp.close().then(() => process.exit(0));
  };
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));
}

main().catch((error: unknown) => {
  console.error(
    JSON.stringify({ msg: 'dev idp failed to start', error: (error as Error).message }),
  );
  process.exit(1);
});
