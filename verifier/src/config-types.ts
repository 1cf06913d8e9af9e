// The verifier's configuration types, derived from the one model in config-model.ts.
export type {
  DpopConfig,
  DpopMode,
  IntrospectionIssuer,
  IssuerConfig,
  JwtIssuer,
  Listen,
  PolicyConfig,
  TokeninfoIssuer,
  RevocationConfig,
  TransportChoice,
  UserinfoIssuer,
  VerifierConfig,
} from './config-model.js';
export { MAX_TOKEN_BYTES } from './config-model.js';
