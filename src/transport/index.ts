/** The transport layer's face (DESIGN §6): the wire codec and the TCP link and server. */
export * from './codec.js';
export * from './tcp.js';
