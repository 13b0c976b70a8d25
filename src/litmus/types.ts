/**
 * The hardware-model litmus catalogue (DESIGN §2: every rule of the model has a litmus test).
 * A litmus runs a tiny program on the emulator, enumerates (or samples, seeded) the crash images
 * or outcomes it can produce, and checks that the outcome that must be possible was produced and
 * that the outcome that must be impossible never was.
 */
export type LitmusLayer = 'pmem' | 'nic';

export interface LitmusOutcome {
  /** Whether the model rules hold: the must-be-possible outcome was seen and the impossible one never. */
  ok: boolean;
  /** What the emulator produced, for people: e.g. "outcomes {A=0, A=1} over 2 images". */
  produced: string;
  /** How many crash images or executions were examined. */
  examined: number;
}

export interface Litmus {
  name: string;
  layer: LitmusLayer;
  /** The rule of DESIGN §2 it checks, in one sentence. */
  rule: string;
  /** The outcome that must be possible (empty string when only an impossibility is checked). */
  mustBePossible: string;
  /** The outcome that must be impossible (empty string when only a possibility is checked). */
  mustBeImpossible: string;
  run(seed: number): LitmusOutcome | Promise<LitmusOutcome>;
}

export interface LitmusResult {
  name: string;
  layer: LitmusLayer;
  rule: string;
  mustBePossible: string;
  mustBeImpossible: string;
  produced: string;
  examined: number;
  ok: boolean;
  seed: number;
  error?: string;
}

/** Runs one litmus; an exception is a failure with its message, never a crash of the runner. */
export async function runLitmus(l: Litmus, seed: number): Promise<LitmusResult> {
  const base = { name: l.name, layer: l.layer, rule: l.rule, mustBePossible: l.mustBePossible, mustBeImpossible: l.mustBeImpossible, seed };
  try {
    const out = await l.run(seed);
    return { ...base, produced: out.produced, examined: out.examined, ok: out.ok };
  } catch (e) {
    return { ...base, produced: 'threw', examined: 0, ok: false, error: e instanceof Error ? `${e.message}` : String(e) };
  }
}
