/**
 * The Pilaf-style baseline behind the App contract (src/apps/app.ts): the kv app's system 'pilaf'
 * (`pmrpc serve --app kv --system pilaf`, the cluster option `system`). The kv app (src/apps/kv/app.ts)
 * picks this adapter or PRISM-KV's by `system`, in its table of systems; the welcome is the kv
 * app's, JSON {system: 'pilaf', rkey, base}.
 */
import type { QueuePair } from '../../../flush/index.js';
import type { PmemRegion } from '../../../pmem/index.js';
import { jsonBytes, type AcceptedClient, type AppHost, type AppProblem, type AppServer } from '../index.js';
import type { KvLayoutOptions } from '../shared/index.js';
import { PilafClient } from './client.js';
import type { PilafFaults } from './faults.js';
import { computePilafGeometry } from './layout.js';
import { PilafServer, type PilafRecovery } from './server.js';

/**
 * What recover() reports for the kv app's system 'pilaf' (the node's start line, `pmrpc inspect`):
 * what opening the area recovered (PilafServer rebuilds its entries and CPU free lists as it
 * opens). A type, not an interface, so that it is an AppServer's JSON report.
 */
export type PilafRecoveryReport = { app: 'kv'; system: 'pilaf' } & PilafRecovery;

/** The Pilaf area opened on a region: `kv` is the Pilaf server, for tests and checkers. */
export class PilafAppServer implements AppServer {
  readonly app = 'kv';
  readonly system = 'pilaf';
  readonly kv: PilafServer;

  constructor(host: AppHost, o: { base: number; pilafFaults?: Partial<PilafFaults> }) {
    // Pilaf rebuilds its CPU free lists as it opens: recover() has nothing left to do.
    this.kv = PilafServer.open(host.region, host.nic, { base: o.base, faults: o.pilafFaults ?? {} });
  }

  recover(): PilafRecoveryReport {
    return { app: 'kv', system: 'pilaf', ...this.kv.lastRecovery };
  }

  accept(_hello: Uint8Array): AcceptedClient {
    const qp = this.kv.accept();
    const a = this.kv.address;
    return { qp, welcome: jsonBytes({ system: this.system, rkey: a.rkey, base: a.base }) };
  }

  release(qpn: number): void {
    this.kv.release(qpn);
  }

  inspect(): Record<string, unknown> {
    return { app: 'kv', system: 'pilaf', geometry: this.kv.geometry };
  }

  /** Nothing to audit after the fact: open() validated every entry and rebuilt the free lists. */
  audit(): AppProblem[] {
    return [];
  }

  close(): void {
    this.kv.close();
  }
}

/** The kv app's system 'pilaf': how large its area is, how it formats one, opens it, and connects a client from the welcome's address. */
export const PILAF_KV_SYSTEM = Object.freeze({
  areaBytes(base: number, layout: Partial<KvLayoutOptions>): number {
    return computePilafGeometry(base, layout).totalBytes;
  },
  format(region: PmemRegion, layout: Partial<KvLayoutOptions>, base: number): void {
    PilafServer.format(region, layout, { base });
  },
  open(host: AppHost, o: { base: number; pilafFaults?: Partial<PilafFaults> }): PilafAppServer {
    return new PilafAppServer(host, o);
  },
  connect(qp: QueuePair, address: { rkey: number; base: number }): Promise<PilafClient> {
    return PilafClient.connect(qp, address);
  },
});
