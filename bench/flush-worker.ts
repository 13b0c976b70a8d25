/** Piscina worker module of `bench flush`: the same handler the owner registers. */
import { rpcWorker } from '../src/rpc/index.js';
import { handlers } from './flush-handlers.js';

export default rpcWorker(handlers);
