/**
 * TEST-ONLY: the replicated register behind the App contract (src/apps/app.ts), to exercise
 * multi-node crash paths of the crash explorer with less machinery than PRISM-RS (layout.ts says
 * what a node holds). It is not PRISM-RS: no ALLOCATE, values are one u64. The crash explorer runs
 * it as `pmrpc crash-test --app register` (src/testing/crash/register.ts); no node hosts it.
 */
import { intIn, must, PmrpcError, resolveOptions, type OptionChecks, type PmemRegion } from '../../../pmem/index.js';
import type { App, AppHost } from '../index.js';
import { blockBytes, decodeRegisterHeader, encodeRegisterHeader, INITIAL_WORD, MAX_WRITERS, REGISTER_HEADER_BYTES, RegisterErrorCodes, wordBytes } from './layout.js';
import { RegisterAppServer } from './server.js';

export interface RegisterAppOptions {
  /** Registers per node (1..4096). */
  registers: number;
  /** Installer ids 1..writers (every client that writes or reads; 1..1024): two records each per register. */
  writers: number;
  /** Offset of the register area in the region (a multiple of 64). */
  base: number;
}

export const REGISTER_APP_DEFAULTS: Readonly<RegisterAppOptions> = Object.freeze({ registers: 1, writers: 8, base: 0 });

const REGISTER_APP_CHECKS: OptionChecks<RegisterAppOptions> = {
  registers: intIn(1, 4096),
  writers: intIn(1, MAX_WRITERS),
  base: must((v) => Number.isSafeInteger(v) && (v as number) >= 0 && (v as number) % 64 === 0, (v) => `must be a non-negative multiple of 64, got ${String(v)}`, RangeError),
};

function resolveRegisterOptions(options: Partial<RegisterAppOptions>): RegisterAppOptions {
  return resolveOptions(REGISTER_APP_DEFAULTS, options, REGISTER_APP_CHECKS);
}

/** TEST-ONLY replicated register app (see the file comment). */
export const registerApp: App<RegisterAppOptions> = Object.freeze({
  name: 'register',
  defaults: REGISTER_APP_DEFAULTS,
  resolveOptions: resolveRegisterOptions,
  minRegionBytes(o: RegisterAppOptions): number {
    return o.base + REGISTER_HEADER_BYTES + o.registers * blockBytes(o.writers);
  },
  format(region: PmemRegion, o: RegisterAppOptions): void {
    const block = blockBytes(o.writers);
    const need = o.base + REGISTER_HEADER_BYTES + o.registers * block;
    if (need > region.sizeBytes) throw new PmrpcError(RegisterErrorCodes.SIZE_TOO_SMALL, `the register area needs ${need} bytes; the region has ${region.sizeBytes}`);
    if (decodeRegisterHeader(region.load(o.base, REGISTER_HEADER_BYTES)) !== undefined) throw new PmrpcError(RegisterErrorCodes.ALREADY_FORMATTED, `offset ${o.base} already holds a register area; it is never overwritten`);
    const area = new Uint8Array(o.registers * block);
    for (let i = 0; i < o.registers; i++) area.set(wordBytes(INITIAL_WORD), i * block);
    region.store(o.base + REGISTER_HEADER_BYTES, area);
    region.persist(o.base + REGISTER_HEADER_BYTES, area.length);
    // The header last: a format cut short leaves no valid header.
    region.store(o.base, encodeRegisterHeader(o.registers, o.writers));
    region.persist(o.base, REGISTER_HEADER_BYTES);
  },
  open(host: AppHost, o: RegisterAppOptions): RegisterAppServer {
    return new RegisterAppServer(host, o);
  },
});
