/** Wiring of clients to a server over the in-process fabric (tests, the crash test, benchmarks). */
import { QueuePair, type InProcessFabric } from '../../flush/index.js';
import { DurableRpcClient, type RpcClientOptions } from './client.js';
import type { DurableRpcServer } from './server.js';

/** A new client of `server`, connected through `fabric`. */
export function connectInProcess(server: DurableRpcServer, fabric: InProcessFabric, options: Partial<RpcClientOptions> = {}): DurableRpcClient {
  const { sqp, info } = server.accept({ packedResults: true });
  return new DurableRpcClient(new QueuePair(fabric.connect(sqp)), info, options);
}

/** Reconnects `client` (to the same server after a disconnect, or to a restarted one): it resumes from the server's resume point. */
export function reconnectInProcess(server: DurableRpcServer, fabric: InProcessFabric, client: DurableRpcClient): void {
  const { sqp, info } = server.accept({ clientId: client.clientId, ...(client.secret === undefined ? {} : { secret: client.secret }), awaiting: client.awaiting, packedResults: true });
  client.reconnect(new QueuePair(fabric.connect(sqp)), info);
}
