/**
 * The analysis of a V8 CPU profile (`node --cpu-prof`) behind `profile-tcp.js --analyse DIR` (which
 * reads profile-inproc.ts's profiles too): self and inclusive time per function over a window of
 * the profile's clock, and the served request's phases. Written by hand: no kept library reads .cpuprofile files into
 * per-window self and inclusive times.
 */
interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
export interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
}

/** A frame's key in the tables: function, file under dist/ or node_modules/, line (1-based; native frames :0). */
function frameKey(f: Node['callFrame']): string {
  return `${f.functionName || '(anon)'} ${f.url.replace(/^.*\/(dist|node_modules)\//, '$1/')}:${f.lineNumber + 1}`;
}

/** Self time per function (µs) of the samples whose timestamp is in [fromUs, toUs) (profile clock). */
export function selfTimes(p: Profile, fromUs: number, toUs: number): Map<string, number> {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const out = new Map<string, number>();
  let t = p.startTime;
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i]!;
    const dt = p.timeDeltas[i + 1] ?? 0;
    if (t < fromUs || t >= toUs) continue;
    const key = frameKey(byId.get(p.samples[i]!)!.callFrame);
    out.set(key, (out.get(key) ?? 0) + dt);
  }
  return out;
}

/**
 * Inclusive time per function (µs) of the samples in [fromUs, toUs): a sample counts once for
 * every distinct function on its stack (a recursive one once), so a phase's figure holds the time
 * of everything it called — where selfTimes spreads it thin over the leaves.
 */
export function inclusiveTimes(p: Profile, fromUs: number, toUs: number): Map<string, number> {
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const keyOf = new Map(p.nodes.map((n) => [n.id, frameKey(n.callFrame)]));
  const out = new Map<string, number>();
  let t = p.startTime;
  const seen = new Set<string>();
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i]!;
    const dt = p.timeDeltas[i + 1] ?? 0;
    if (t < fromUs || t >= toUs) continue;
    seen.clear();
    for (let id: number | undefined = p.samples[i]!; id !== undefined; id = parent.get(id)) {
      const key = keyOf.get(id)!;
      if (seen.has(key)) continue;
      seen.add(key);
      out.set(key, (out.get(key) ?? 0) + dt);
    }
  }
  return out;
}

/**
 * The phases of a served request, by the function that runs each (inclusive µs a request; a
 * phase absent from the profile prints 0). Nested phases overlap their parent: the CPU pass holds
 * the redo-log commit, the handler and the RESULTs' encoding.
 */
export const PHASES: ReadonlyArray<readonly [string, RegExp]> = [
  ['NIC pump (socket read → ring, persist, ACK)', /^#pump dist\/src\/transport\/server\.js/],
  ['CPU pass (process a batch)', /^#processBatch dist\/src\/rpc\/server\.js/],
  ['  redo-log commit', /^commit dist\/recovery\/redo-log\.js/],
  ['  handler (effects)', /^effects dist\/src\/rpc\/methods\.js/],
  ['  RESULTs encoded (#send)', /^#send dist\/src\/rpc\/server\.js/],
  ['socket writes (writeBuffer)', /^writeBuffer :0/],
  ['strict: media written (pwrite)', /^#writeMedia dist\/pmem\/region\.js/],
  ['strict: msync submitted / called back', /^#(startAsync|releaseAsync) dist\/pmem\/region\.js/],
  ['garbage collector', /^\(garbage collector\)/],
];

/** µs a request of each phase (the largest matching function's inclusive time: a phase's alternatives nest). */
export function phaseTimes(incl: Map<string, number>, requests: number): Array<[string, number]> {
  return PHASES.map(([name, re]) => {
    let best = 0;
    for (const [k, v] of incl) if (re.test(k) && v > best) best = v;
    return [name, requests > 0 ? best / requests : 0];
  });
}

export function top(m: Map<string, number>, requests: number, n: number): string[] {
  const total = [...m.values()].reduce((a, b) => a + b, 0);
  const idle = m.get('(idle) :0') ?? 0;
  const rows = [...m.entries()].filter(([k]) => !k.startsWith('(idle)')).sort((a, b) => b[1] - a[1]).slice(0, n);
  return [`  busy ${((total - idle) / requests).toFixed(1)} µs/request (idle ${(idle / requests).toFixed(1)})`, ...rows.map(([k, v]) => `  ${(v / requests).toFixed(2).padStart(7)}  ${k}`)];
}

