/**
 * Crash images (DESIGN §2.1, §8). A CrashState is media plus independent components: a cache
 * line's pending pieces (an image holds an in-order prefix of them) or a NIC message's words
 * (any subset). An image is one choice per component, applied over media in component order.
 *
 * Engines:
 * - 'none': media only (nothing pending survived);
 * - 'all': every pending piece survived (the visible memory, less undrained NIC data that the
 *   NIC contributed);
 * - 'random': seeded choices, count-bounded; the first two images are 'none' and 'all';
 * - 'exhaustive': every image, refused past `maxImages` (PMRPC_ERR_TOO_MANY_IMAGES).
 */
import { writeFileSync } from 'node:fs';
import { ErrorCodes, invariant, PmrpcError, PmrpcIoError } from './errors.js';
import { HEADER_BYTES } from './header.js';
import { intIn, must, onlyIf, positiveInt, resolveOptions, type OptionChecks } from './options.js';
import { createPrng } from './prng.js';
import type { CrashComponent, CrashState } from './region.js';

export type CrashEngine = 'none' | 'all' | 'random' | 'exhaustive';

export const CRASH_ENGINES: readonly CrashEngine[] = ['none', 'all', 'random', 'exhaustive'];

export interface ImageOptions {
  engine: CrashEngine;
  /** 'random': how many images (default 64). */
  count: number;
  /** 'random': seed of the choices (default 0). */
  seed: number;
  /** 'exhaustive': the most images it will enumerate (default 100,000). */
  maxImages: number;
}

export const IMAGE_DEFAULTS: Readonly<ImageOptions> = Object.freeze({ engine: 'random', count: 64, seed: 0, maxImages: 100_000 });

const IMAGE_CHECKS: OptionChecks<ImageOptions> = {
  engine: must((v) => CRASH_ENGINES.includes(v as CrashEngine), (v) => `must be one of ${CRASH_ENGINES.join(', ')}, got ${String(v)}`),
  count: onlyIf((o) => o.engine === 'random', positiveInt),
  maxImages: onlyIf((o) => o.engine === 'exhaustive', intIn(1, 2 ** 31, '[1, 2^31]')),
};

/**
 * One choice per component: for 'prefix' the number of pieces kept (0..n); for 'subset' the
 * indexes of the pieces kept (ascending).
 */
export type ImageChoice = number | number[];

export interface CrashImage {
  /** Position of this image in its engine's sequence. */
  index: number;
  choices: ImageChoice[];
}

/** The analytic number of distinct choice vectors: Π (n+1) over prefixes × Π 2^n over subsets. */
export function countImages(state: CrashState): bigint {
  let n = 1n;
  for (const c of state.components) n *= c.kind === 'prefix' ? BigInt(c.pieces.length + 1) : 1n << BigInt(c.pieces.length);
  return n;
}

/** The images of `state` under an engine, lazily. */
export function crashImages(state: CrashState, options: Partial<ImageOptions> = {}): Generator<CrashImage> {
  // Validate here, not inside the generator: a bad option or an over-bound exhaustive request
  // fails at the call, not at the first iteration.
  const o = resolveOptions(IMAGE_DEFAULTS, options, IMAGE_CHECKS);
  if (o.engine === 'exhaustive') {
    const total = countImages(state);
    if (total > BigInt(o.maxImages)) {
      throw new PmrpcError(ErrorCodes.TOO_MANY_IMAGES, `exhaustive engine: ${total} images exceed the bound of ${o.maxImages}; use the random engine or raise maxImages`);
    }
  }
  return images(state, o);
}

function* images(state: CrashState, o: ImageOptions): Generator<CrashImage> {
  const comps = state.components;
  const none = (): ImageChoice[] => comps.map((c) => (c.kind === 'prefix' ? 0 : []));
  const all = (): ImageChoice[] => comps.map((c) => (c.kind === 'prefix' ? c.pieces.length : c.pieces.map((_, i) => i)));
  switch (o.engine) {
    case 'none':
      yield { index: 0, choices: none() };
      return;
    case 'all':
      yield { index: 0, choices: all() };
      return;
    case 'random': {
      const prng = createPrng(o.seed);
      yield { index: 0, choices: none() };
      if (o.count > 1 && comps.length > 0) yield { index: 1, choices: all() };
      const total = countImages(state);
      const limit = Math.min(o.count, Number(total < BigInt(o.count) ? total : BigInt(o.count)));
      for (let i = 2; i < limit; i++) {
        const choices = comps.map((c): ImageChoice => {
          // Half the components keep nothing or everything, like Vinter's line subsets; the rest a random cut.
          const r = prng.int(0, 3);
          if (c.kind === 'prefix') return r === 0 ? 0 : r === 1 ? c.pieces.length : prng.int(0, c.pieces.length);
          if (r === 0) return [];
          if (r === 1) return c.pieces.map((_, j) => j);
          return c.pieces.map((_, j) => j).filter(() => prng.chance(0.5));
        });
        yield { index: i, choices };
      }
      return;
    }
    case 'exhaustive': {
      const total = countImages(state);
      const radix = comps.map((c) => (c.kind === 'prefix' ? c.pieces.length + 1 : 2 ** c.pieces.length));
      const digits = radix.map(() => 0);
      for (let index = 0; index < Number(total); index++) {
        yield {
          index,
          choices: comps.map((c, k) => (c.kind === 'prefix' ? digits[k]! : c.pieces.map((_, j) => j).filter((j) => (digits[k]! >>> j) & 1))),
        };
        for (let k = 0; k < digits.length; k++) {
          digits[k]!++;
          if (digits[k]! < radix[k]!) break;
          digits[k] = 0;
        }
      }
      return;
    }
  }
}

/** The bytes of a whole region file for one image: media with the chosen pieces applied. */
export function materialize(state: CrashState, image: CrashImage | ImageChoice[]): Uint8Array {
  const choices = Array.isArray(image) ? image : image.choices;
  if (choices.length !== state.components.length) {
    throw new RangeError(`image has ${choices.length} choices for ${state.components.length} components`);
  }
  // Every piece an image may apply lies in the data area, past the header (a piece out of it would
  // write the image's header or fall off its end): checked before the image is built.
  const dataBytes = state.media.length - HEADER_BYTES;
  for (const c of state.components) {
    for (const p of c.pieces) invariant(Number.isSafeInteger(p.offset) && p.offset >= 0 && p.offset + p.bytes.length <= dataBytes, () => `crash piece [${p.offset}, ${p.offset + p.bytes.length}) of ${c.source} is outside the region's ${dataBytes} bytes`);
  }
  const out = state.media.slice();
  state.components.forEach((c: CrashComponent, k) => {
    const choice = choices[k]!;
    const n = c.pieces.length;
    const ok =
      typeof choice === 'number'
        ? c.kind === 'prefix' && Number.isInteger(choice) && choice >= 0 && choice <= n
        : c.kind === 'subset' && Array.isArray(choice) && choice.every((i) => Number.isInteger(i) && i >= 0 && i < n);
    if (!ok) throw new RangeError(`image choice ${k} (${JSON.stringify(choice)}) does not fit ${c.kind} component ${c.source} of ${n} pieces`);
    if (typeof choice === 'number') {
      for (let i = 0; i < choice; i++) out.set(c.pieces[i]!.bytes, HEADER_BYTES + c.pieces[i]!.offset);
    } else {
      for (const i of choice) out.set(c.pieces[i]!.bytes, HEADER_BYTES + c.pieces[i]!.offset);
    }
  });
  return out;
}

/** Writes an image as a region file, to open with PmemRegion.open. Refuses to overwrite. */
export function writeImageFile(path: string, image: Uint8Array): void {
  try {
    writeFileSync(path, image, { flag: 'wx' });
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    if (err.code === 'EEXIST') throw new PmrpcError(ErrorCodes.REGION_EXISTS, `${path} already exists; pmrpc never overwrites a file`, { cause: e });
    throw new PmrpcIoError(`cannot write ${path}: ${err.message}`, err.code ?? 'EUNKNOWN', err.syscall ?? 'open', e);
  }
}
