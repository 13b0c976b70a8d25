/**
 * The transport layer's face (DESIGN §6): the wire codec, the TCP server (server.ts) and client
 * link (link.ts), their bounds (limits.ts), codes (errors.ts) and address checks (auth.ts).
 * Other layers import only this file.
 */
export * from './codec.js';
export { TransportErrorCodes } from './errors.js';
export { isLoopbackHost } from './auth.js';
export { MIN_FRAME_BYTES, responseBoundBytes } from './limits.js';
export { TcpNicServer, TCP_SERVER_DEFAULTS, resolveTcpServerOptions, type TcpNicServerOptions, type HelloInfo, type AcceptResult, type DisconnectInfo, type TcpObserver, type ConnectionStats, type TcpServerStats } from './server.js';
export { TcpLink, TCP_LINK_DEFAULTS, type TcpLinkOptions } from './link.js';
