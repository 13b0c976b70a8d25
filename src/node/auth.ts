/**
 * Where a node's (and a client's) auth token comes from: a token file, else the PMRPC_AUTH_TOKEN
 * environment variable — never a cluster file (src/cluster refuses one there). A Kubernetes Secret
 * mounted as a file or an env var, a systemd EnvironmentFile / LoadCredential, all fit (docs/deploy.md).
 */
import { readFileSync } from 'node:fs';
import { PmrpcError, defineErrorCodes, type ErrorCodesOf } from '../../pmem/index.js';
import { AUTH_TOKEN_CHARS_MAX } from '../transport/index.js';

export const AuthErrorCodes = defineErrorCodes('node', {
  /** The token file cannot be read, or is empty. */
  BAD_TOKEN_FILE: 'PMRPC_ERR_BAD_TOKEN_FILE',
  /** An auth token given explicitly but empty (`--auth-token ''`), or longer than the wire allows. */
  BAD_AUTH_TOKEN: 'PMRPC_ERR_BAD_AUTH_TOKEN',
});

declare module '../../pmem/index.js' {
  interface PmrpcErrorCodeRegistry extends ErrorCodesOf<typeof AuthErrorCodes> {}
}

export const AUTH_TOKEN_ENV = 'PMRPC_AUTH_TOKEN';

/**
 * The token: the first line of `authTokenFile` when given, else env PMRPC_AUTH_TOKEN, else
 * `authToken` (an explicit value, e.g. `serve --auth-token`), else undefined (loopback only).
 */
export function resolveAuthToken(o: { authTokenFile?: string | undefined; authToken?: string | undefined }, env: Readonly<Record<string, string | undefined>> = process.env): string | undefined {
  if (o.authTokenFile !== undefined) {
    let text: string;
    try {
      text = readFileSync(o.authTokenFile, 'utf8');
    } catch (e) {
      throw new PmrpcError(AuthErrorCodes.BAD_TOKEN_FILE, `cannot read the token file ${o.authTokenFile}: ${(e as Error).message}`);
    }
    const t = text.split(/\r?\n/)[0]!.trim();
    if (t.length === 0) throw new PmrpcError(AuthErrorCodes.BAD_TOKEN_FILE, `the token file ${o.authTokenFile} is empty`);
    return t;
  }
  const e = env[AUTH_TOKEN_ENV];
  if (e !== undefined && e.length > 0) return e;
  return o.authToken;
}

/**
 * A token as a node or a client may use it: undefined (none: loopback only) or a non-empty string
 * the Hello can carry; anything else is PMRPC_ERR_BAD_AUTH_TOKEN (before any file is touched).
 */
export function checkAuthToken(token: unknown): string | undefined {
  if (token === undefined) return undefined;
  if (typeof token !== 'string' || token.length === 0) {
    throw new PmrpcError(AuthErrorCodes.BAD_AUTH_TOKEN, 'the auth token is empty: give a non-empty token (--auth-token, --auth-token-file or PMRPC_AUTH_TOKEN), or none and bind a loopback host');
  }
  if (token.length > AUTH_TOKEN_CHARS_MAX) throw new PmrpcError(AuthErrorCodes.BAD_AUTH_TOKEN, `the auth token has ${token.length} characters, more than the ${AUTH_TOKEN_CHARS_MAX} a Hello carries`);
  return token;
}
