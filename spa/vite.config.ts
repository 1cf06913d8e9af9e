// Builds the SPA into spa/dist with hashed files under /assets/, which NGINX serves as-is.
// In development (`npx vite spa`) this server also plays NGINX's two roles the app depends on:
// /config.json from the same SG_OIDC_* variables, and /secret (and /secret/<name>) + /hello
// proxied to a running gate.
import { fileURLToPath } from 'node:url';
import { defineConfig, type Plugin } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));

/** Serves /config.json in dev only; the production file is rendered by NGINX, never bundled. */
function devRuntimeConfig(): Plugin {
  const env = process.env;
  const imageUrl = env.SG_CLOUDFRONT_IMAGE_URL;
  const body = JSON.stringify({
    issuer: env.SG_OIDC_ISSUER ?? 'http://127.0.0.1:8081',
    clientId: env.SG_OIDC_CLIENT_ID ?? 'spa-demo',
    scope: env.SG_OIDC_SCOPE ?? 'openid profile secrets:read',
    audience: env.SG_OIDC_AUDIENCE ?? 'secret-gate-api',
    secretSets: env.SG_SPA_SECRET_SETS ?? '',
    ...(imageUrl ? { cloudfront: { imageUrl } } : {}),
  });
  return {
    name: 'secret-gate-dev-config',
    apply: 'serve',
    configureServer(server) {
      server.middlewares.use('/config.json', (_req, res) => {
        res.setHeader('Content-Type', 'application/json');
        res.setHeader('Cache-Control', 'no-store');
        res.end(body);
      });
    },
  };
}

const gate = process.env.SG_GATE_URL ?? 'http://127.0.0.1:8080';

export default defineConfig({
  root,
  // Absolute asset URLs: NGINX answers every unknown path with index.html (try_files), so
  // relative ones would break on deep links.
  base: '/',
  plugins: [devRuntimeConfig()],
  // The client package from its sources (as spa/tsconfig.json maps it), so no build comes first.
  resolve: {
    alias: {
      '@secret-gate/client': fileURLToPath(
        new URL('../packages/secret-gate-client/src/index.ts', import.meta.url),
      ),
    },
  },
  build: {
    outDir: 'dist',
    assetsDir: 'assets',
    emptyOutDir: true,
    target: 'es2022',
    // The strict CSP forbids inline scripts; modern browsers need no modulepreload polyfill.
    modulePreload: { polyfill: false },
  },
  server: {
    host: '127.0.0.1',
    strictPort: true,
    proxy: {
      '/secret': gate,
      '/hello': gate,
    },
  },
});
