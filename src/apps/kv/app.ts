/**
 * The kv app behind the App contract (src/apps/app.ts): what the node host serves over TCP and what
 * the crash explorer runs on crash images. Its option `system` picks PRISM-KV (this file's adapter)
 * or the Pilaf-style baseline (src/apps/pilaf/app.ts), once, from KV_SYSTEM_TABLE. A hello is
 * empty; the welcome is JSON {system, rkey, base}: what a client needs to reach the KV area.
 */
import { oneOf, PmemRegion, PmrpcError, resolveOptions, type OptionChecks } from '../../../pmem/index.js';
import type { QueuePair } from '../../../flush/index.js';
import { guardedMicrotask, jsonBytes, parseJsonBytes, refuseOtherApp, type AcceptedClient, type App, type AppHost, type AppProblem, type AppServer } from '../index.js';
import { PILAF_KV_SYSTEM, type PilafAppServer, type PilafClient, type PilafFaults, type PilafRecoveryReport } from '../pilaf/index.js';
import { kvBase } from './checks.js';
import { PrismKvClient, type KvClientOptions } from './client.js';
import type { KvFaults } from './faults.js';
import { computeKvGeometry, KV_LAYOUT_DEFAULTS, KvErrorCodes, validateLayoutOptions, type KvLayoutOptions } from './layout.js';
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
  /** Test-only fault switches (mutants) of the Pilaf baseline (src/apps/pilaf/faults.ts). */
  pilafFaults: Partial<PilafFaults>;
}

export const KV_APP_DEFAULTS: Readonly<KvAppOptions> = Object.freeze({ system: 'prism', layout: KV_LAYOUT_DEFAULTS, base: 0, faults: Object.freeze({}), pilafFaults: Object.freeze({}) });

/**
 * What recover() reports for the kv app's system 'prism' (the node's start line, `pmrpc inspect`):
 * PrismKvServer's KvRecoveryReport as JSON (the epoch as a string, the rejected pointers counted).
 * A type, not an interface, so that it is an AppServer's JSON report. A second recover() returns it again.
 */
export type PrismKvAppRecoveryReport = {
  app: 'kv';
  system: 'prism';
  epoch: string;
  slotsScanned: number;
  slotsRepaired: number;
  pointersRejected: number;
  reachable: number;
  reclaimed: number;
};

/** PRISM-KV opened on a region: `kv` is the PRISM-KV server, for tests and checkers. */
export class PrismKvAppServer implements AppServer {
  readonly app = 'kv';
  readonly system = 'prism';
  readonly kv: PrismKvServer;
  #report: PrismKvAppRecoveryReport | undefined;

  constructor(host: AppHost, o: KvAppOptions) {
    // PRISM-KV refuses ALLOCATE until recover() rebuilt its free lists.
    this.kv = PrismKvServer.open(host.region, host.nic, { base: o.base, faults: o.faults, deferRecovery: true, poller: { schedule: guardedMicrotask(host) } });
  }

  recover(): PrismKvAppRecoveryReport {
    if (this.#report !== undefined) return this.#report;
    const r = this.kv.recover();
    this.#report = { app: 'kv', system: 'prism', epoch: r.epoch.toString(), slotsScanned: r.slotsScanned, slotsRepaired: r.slotsRepaired, pointersRejected: r.pointersRejected.length, reachable: r.reachable, reclaimed: r.reclaimed };
    return this.#report;
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
    const v = this.kv.inspect();
    return { app: 'kv', system: 'prism', epoch: this.kv.epoch.toString(), items: v.items.size, reachable: v.reachable.size, problems: v.problems };
  }

  audit(): AppProblem[] {
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

/** What the kv app's recover() reports: PRISM-KV's or Pilaf's (`system` tells which). */
export type KvAppRecoveryReport = PrismKvAppRecoveryReport | PilafRecoveryReport;

/** The kv app opened on a region: PRISM-KV's adapter or Pilaf's (`system` tells which; `kv` is the server). */
export type KvAppServer = PrismKvAppServer | PilafAppServer;

/** One kv system: how large its area is, how it formats and opens one, and how a client connects from the welcome's address. */
interface KvSystemEntry {
  /** Its client reconnects a live server after a dropped connection (PRISM-KV's does; Pilaf's fails the operation). */
  reconnects: boolean;
  areaBytes(base: number, layout: Partial<KvLayoutOptions>): number;
  format(region: PmemRegion, layout: Partial<KvLayoutOptions>, base: number): void;
  open(host: AppHost, o: KvAppOptions): KvAppServer;
  connect(qp: QueuePair, address: { rkey: number; base: number }, options: Partial<KvClientOptions>): Promise<PrismKvClient | PilafClient>;
}

/** The kv app's systems, chosen from here and nowhere else. */
const KV_SYSTEM_TABLE: Readonly<Record<KvSystem, KvSystemEntry>> = Object.freeze({
  prism: Object.freeze({
    reconnects: true,
    areaBytes: (base: number, layout: Partial<KvLayoutOptions>) => computeKvGeometry(base, validateLayoutOptions(layout)).totalBytes,
    format: (region: PmemRegion, layout: Partial<KvLayoutOptions>, base: number) => void PrismKvServer.format(region, layout, { base }),
    open: (host: AppHost, o: KvAppOptions) => new PrismKvAppServer(host, o),
    connect: (qp: QueuePair, address: { rkey: number; base: number }, options: Partial<KvClientOptions>) => PrismKvClient.connect(qp, address, options),
  }),
  pilaf: Object.freeze({ ...PILAF_KV_SYSTEM, reconnects: false }),
});

/** Whether the client of kv system `system` reconnects a live server after a dropped connection (the crash explorer draws drops only then). */
export function kvSystemReconnects(system: KvSystem): boolean {
  return KV_SYSTEM_TABLE[system].reconnects;
}

const KV_APP_CHECKS: OptionChecks<KvAppOptions> = {
  system: oneOf(Object.keys(KV_SYSTEM_TABLE)),
  base: kvBase,
  layout: (_name, v) => void validateLayoutOptions(v as Partial<KvLayoutOptions>),
};

function resolveKvAppOptions(options: Partial<KvAppOptions>): KvAppOptions {
  return resolveOptions(KV_APP_DEFAULTS, options, KV_APP_CHECKS);
}

export const kvApp: App<KvAppOptions> = Object.freeze({
  name: 'kv',
  defaults: KV_APP_DEFAULTS,
  resolveOptions: resolveKvAppOptions,
  minRegionBytes(o: KvAppOptions): number {
    return o.base + KV_SYSTEM_TABLE[o.system].areaBytes(o.base, o.layout);
  },
  format(region: PmemRegion, o: KvAppOptions): void {
    refuseOtherApp(region, o.base, 'kv', o.system);
    KV_SYSTEM_TABLE[o.system].format(region, o.layout, o.base);
  },
  open(host: AppHost, o: KvAppOptions): KvAppServer {
    refuseOtherApp(host.region, o.base, 'kv', o.system);
    return KV_SYSTEM_TABLE[o.system].open(host, o);
  },
});

/** The client side of the KV app's handshake: a PRISM-KV or Pilaf client on `qp`, from the welcome bytes. */
export async function connectKvClient(qp: QueuePair, welcome: Uint8Array, options: Partial<KvClientOptions> = {}): Promise<PrismKvClient | PilafClient> {
  const w = parseJsonBytes(welcome);
  if (w === undefined || typeof w.system !== 'string' || !Object.hasOwn(KV_SYSTEM_TABLE, w.system) || !Number.isSafeInteger(w.rkey) || !Number.isSafeInteger(w.base)) {
    throw new PmrpcError(KvErrorCodes.NOT_FORMATTED, 'the welcome is not a KV address {system, rkey, base}');
  }
  return KV_SYSTEM_TABLE[w.system as KvSystem].connect(qp, { rkey: w.rkey as number, base: w.base as number }, options);
}
