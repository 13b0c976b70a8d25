/**
 * The `App` contract (DESIGN §6, §8): what an application hosted on one PM region supplies, so that
 * one node host (src/node: a process on a PM file, serving over TCP) and one crash explorer
 * (src/testing/crash: in-process, on crash images) can run any app — the durable RPC app, PRISM-KV,
 * PRISM-RS, PRISM-TX and their baselines.
 *
 * Life cycle, the same in both hosts:
 *   new region → app.format(region, o) → app.open(host, o) → server.recover() → server.accept(hello)… → server.close()
 *   existing region (a file after a crash, or a crash image) → app.open(host, o) → server.recover() → …
 * The host owns the region and the NIC: it creates, writes back and closes them; the app never does.
 * A hello and a welcome are app-defined bytes (JSON for the built-in apps), carried by the TCP
 * Hello / Welcome frames or passed by call in-process.
 */
import { isInvariantError, type Clock, type Entropy, type PmemRegion } from '../../pmem/index.js';
import type { Rnic, ServerQp } from '../../flush/index.js';

/** What a host gives an app: the region it owns, the NIC in front of it, time, scheduling and entropy. */
export interface AppHost {
  readonly region: PmemRegion;
  readonly nic: Rnic;
  readonly clock: Clock;
  /** How the app schedules its CPU passes (queueMicrotask on a node; a seeded delay in the explorer). */
  readonly schedule: (fn: () => void) => void;
  /** Identities the app creates (tokens, ids) come from here (crypto on a node, the seeded PRNG in tests). */
  readonly entropy: Entropy;
  /**
   * Optional: how the host stops the node when a pass the app ran outside `schedule` (a microtask:
   * the return mailboxes' CPU poller) breaks an invariant of pmrpc's own state (PMRPC_ERR_INVARIANT).
   * Absent (a node process): the error is thrown and the process exits (code 70); the crash
   * explorer halts the node and reports the violation.
   */
  readonly halt?: (error: Error) => void;
}

/** queueMicrotask whose pass, on a broken invariant, calls host.halt (when the host has one) instead of throwing. */
export function guardedMicrotask(host: Pick<AppHost, 'halt'>): (fn: () => void) => void {
  const halt = host.halt;
  if (halt === undefined) return queueMicrotask;
  return (fn) =>
    queueMicrotask(() => {
      try {
        fn();
      } catch (e) {
        if (!isInvariantError(e)) throw e;
        halt(e as Error);
      }
    });
}

/** A client the app accepted: the server QP its link connects to, and the welcome it is sent. */
export interface AcceptedClient {
  qp: ServerQp;
  welcome: Uint8Array;
}

/** One invariant the app found broken (audit), or one thing recovery repaired (inspect). */
export interface AppProblem {
  kind: string;
  detail: string;
}

/**
 * What recover() returns: each app's own named report type (RpcRecoverySummary, KvAppRecoveryReport,
 * PilafRecoveryReport, RsRecoverySummary, RsLockRecoveryReport, RegisterRecoveryReport,
 * TxShardRecoveryReport, TxLockRecoveryReport), JSON-able (the node's start line, `pmrpc inspect`),
 * naming its app — so a bare `Record<string, unknown>` is not a report.
 */
export interface AppRecoveryReport {
  readonly app: string;
}

/** An app opened on a region. */
export interface AppServer {
  readonly app: string;
  /**
   * Recovers the durable state (replay, repair, rebuild free lists) and starts serving. Idempotent,
   * and a crash in the middle of it is survivable. Returns the app's JSON-able report.
   */
  recover(): AppRecoveryReport;
  /** Accepts a client (throws a coded PmrpcError to refuse it). Only after recover(). */
  accept(hello: Uint8Array): AcceptedClient;
  /**
   * Optional: the connection of a QP this app accepted is gone (the client said goodbye, its lease
   * expired, or the link dropped). The app may reclaim what it gave that connection, after fencing
   * it (destroy the QP first: nothing of the old connection may land in memory handed to the next
   * one). Hosts call it once per closed connection; idempotent.
   */
  release?(qpn: number): void;
  /** A JSON-able, read-only report of the state (what `pmrpc inspect` shows). */
  inspect(): Record<string, unknown>;
  /** The app's invariants checked on the state as it is now: empty when sound. */
  audit(): AppProblem[];
  /** Stops serving. The region and the NIC stay the host's to close. */
  close(): void;
}

/** An application: named, with options (one defaults object, validated), format and open. */
export interface App<O extends object = object> {
  readonly name: string;
  readonly defaults: Readonly<O>;
  /**
   * On a strict PM file, the CPU passes a NIC run schedules may run at the end of that run, inside
   * its group commit, so that their records share the run's msync (src/node/host.ts). Only an app
   * whose passes never wait on anything but the region may say so (the rpc app).
   */
  readonly passesAtRunEnd?: boolean;
  /** Defaults + validation: a TypeError / RangeError with an exact message for a bad option. */
  resolveOptions(options: Partial<O>): O;
  /** The smallest region (data bytes) a node of this app needs with these options. */
  minRegionBytes(o: O): number;
  /** Formats an empty region and persists it; refuses (coded error) a region that already holds one. */
  format(region: PmemRegion, o: O): void;
  /** Opens a formatted region (validates it; serving starts with recover()). */
  open(host: AppHost, o: O): AppServer;
}

const te = new TextEncoder();
const td = new TextDecoder('utf-8', { fatal: true });

/** JSON bytes for hellos and welcomes of the built-in apps. */
export function jsonBytes(v: unknown): Uint8Array {
  return te.encode(JSON.stringify(v));
}

/** Parses JSON bytes (empty = {}); undefined when they are not a JSON object. */
export function parseJsonBytes(b: Uint8Array): Record<string, unknown> | undefined {
  try {
    const v: unknown = b.length === 0 ? {} : JSON.parse(td.decode(b));
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * What a test-only mutant needs from the crash explorer to show (plain data: src/testing/crash reads
 * it as the app's exploreDefaults): NIC pins (config.ts NicPins) and an adversarial schedule
 * (pct.ts ScheduleOptions) — e.g. a client held back right after a CAS. The correct protocol under
 * the same settings reports nothing.
 */
export interface MutantExplore {
  pins?: { drain?: 'eager' | 'lazy-small' | 'lazy-large' | 'onFlush'; ddio?: boolean; placement?: 'any' | 'ascending'; eviction?: number; lineModel?: 'prefix' | 'subset' };
  schedule?: { mode?: 'random' | 'pct'; depth?: number; horizon?: number; stalls?: number; stallSteps?: number; stallUnit?: 'qp' | 'client'; stallOn?: 'any' | 'atomic' };
  /** A crash plan (multi.ts syntax) the explorer replays instead of the image tuples, unless the caller gives one: for a mutant only a multi-node crash run shows. */
  crashPlan?: string;
}
