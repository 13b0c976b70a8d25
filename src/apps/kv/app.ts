/**
 * PRISM-KV (and its Pilaf-style baseline) behind the App contract (src/apps/app.ts): what the node
 * host serves over TCP and what the crash explorer runs on crash images. A hello is empty; the
 * welcome is JSON {system, rkey, base}: what a client needs to reach the KV area.
 */
import { oneOf, PmemRegion, PmrpcError, resolveOptions, type OptionChecks } from '../../../pmem/index.js';
import type { QueuePair } from '../../../flush/index.js';
import { guardedMicrotask, jsonBytes, parseJsonBytes, refuseOtherApp, type AcceptedClient, type App, type AppHost, type AppProblem, type AppServer } from '../index.js';
import { kvBase } from './checks.js';
import { PrismKvClient, type KvClientOptions } from './client.js';
import type { KvFaults } from './faults.js';
import { computeKvGeometry, KV_LAYOUT_DEFAULTS, KvErrorCodes, validateLayoutOptions, type KvLayoutOptions } from './layout.js';
import { PilafClient, PilafServer } from './pilaf.js';
import { PrismKvServer } from './server.js';

export type KvSystem = 'prism' | 'pilaf';

export interface KvAppOptions {
  /** PRISM-KV (NIC chains) or the Pilaf-style baseline (PUT by RPC to the server CPU). */
  system: KvSystem;
  layout: Partial<KvLayoutOptions>;
  /** Offset of the KV area in the region (a multiple of 64). */
  base: number;
  /** Test-only fault switches (mutants) of PRISM-KV. */
  faults: Partial<KvFaults>;
}

export const KV_APP_DEFAULTS: Readonly<KvAppOptions> = Object.freeze({ system: 'prism', layout: KV_LAYOUT_DEFAULTS, base: 0, faults: Object.freeze({}) });

const KV_APP_CHECKS: OptionChecks<KvAppOptions> = {
  system: oneOf(['prism', 'pilaf']),
  base: kvBase,
  layout: (_name, v) => void validateLayoutOptions(v as Partial<KvLayoutOptions>),
};

function resolveKvAppOptions(options: Partial<KvAppOptions>): KvAppOptions {
  return resolveOptions(KV_APP_DEFAULTS, options, KV_APP_CHECKS);
}

/** The KV app opened on a region: `kv` is the PRISM-KV or Pilaf server, for tests and checkers. */
export class KvAppServer implements AppServer {
  readonly app = 'kv';
  readonly system: KvSystem;
  readonly kv: PrismKvServer | PilafServer;
  #recovered = false;

  constructor(host: AppHost, o: KvAppOptions) {
    this.system = o.system;
    // PRISM-KV refuses ALLOCATE until recover() rebuilt its free lists; Pilaf rebuilds its CPU lists as it opens.
    this.kv = o.system === 'prism' ? PrismKvServer.open(host.region, host.nic, { base: o.base, faults: o.faults, deferRecovery: true, poller: { schedule: guardedMicrotask(host) } }) : PilafServer.open(host.region, host.nic, { base: o.base });
  }

  recover(): Record<string, unknown> {
    if (this.#recovered) return {};
    this.#recovered = true;
    if (!(this.kv instanceof PrismKvServer)) return { system: 'pilaf' };
    const r = this.kv.recover();
    return { system: 'prism', epoch: r.epoch.toString(), slotsScanned: r.slotsScanned, slotsRepaired: r.slotsRepaired, pointersRejected: r.pointersRejected.length, reachable: r.reachable, reclaimed: r.reclaimed };
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
    if (!(this.kv instanceof PrismKvServer)) return { app: 'kv', system: 'pilaf', geometry: this.kv.geometry };
    const v = this.kv.inspect();
    return { app: 'kv', system: 'prism', epoch: this.kv.epoch.toString(), items: v.items.size, reachable: v.reachable.size, problems: v.problems };
  }

  audit(): AppProblem[] {
    if (!(this.kv instanceof PrismKvServer)) return [];
    const out: AppProblem[] = this.kv.inspect().problems.map((p) => ({ kind: 'index', detail: `slot ${p.slot}: ${p.problem}` }));
    const a = this.kv.auditAllocator();
    const bad = { leaked: a.leaked.length, doubleFree: a.doubleFree.length, freeAndReachable: a.freeAndReachable.length, foreign: a.foreign.length };
    for (const [k, n] of Object.entries(bad)) if (n > 0) out.push({ kind: 'allocator', detail: `${n} buffers ${k}` });
    return out;
  }

  close(): void {
    this.kv.close();
  }
}

export const kvApp: App<KvAppOptions> = Object.freeze({
  name: 'kv',
  defaults: KV_APP_DEFAULTS,
  resolveOptions: resolveKvAppOptions,
  minRegionBytes(o: KvAppOptions): number {
    return o.base + computeKvGeometry(o.base, validateLayoutOptions(o.layout)).totalBytes;
  },
  format(region: PmemRegion, o: KvAppOptions): void {
    refuseOtherApp(region, o.base, 'kv', o.system);
    if (o.system === 'prism') PrismKvServer.format(region, o.layout, { base: o.base });
    else PilafServer.format(region, o.layout, { base: o.base });
  },
  open(host: AppHost, o: KvAppOptions): KvAppServer {
    refuseOtherApp(host.region, o.base, 'kv', o.system);
    return new KvAppServer(host, o);
  },
});

/** The client side of the KV app's handshake: a PRISM-KV or Pilaf client on `qp`, from the welcome bytes. */
export async function connectKvClient(qp: QueuePair, welcome: Uint8Array, options: Partial<KvClientOptions> = {}): Promise<PrismKvClient | PilafClient> {
  const w = parseJsonBytes(welcome);
  if (w === undefined || (w.system !== 'prism' && w.system !== 'pilaf') || !Number.isSafeInteger(w.rkey) || !Number.isSafeInteger(w.base)) {
    throw new PmrpcError(KvErrorCodes.NOT_FORMATTED, 'the welcome is not a KV address {system, rkey, base}');
  }
  const address = { rkey: w.rkey as number, base: w.base as number };
  return w.system === 'prism' ? PrismKvClient.connect(qp, address, options) : PilafClient.connect(qp, address);
}
