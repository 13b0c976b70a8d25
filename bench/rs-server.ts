/**
 * The TCP replicas of `bench rs`, run as a child process from the compiled code
 * (`node dist/bench/rs-server.js '<json {app, nodes, appOptions, seed}>'`): `nodes` node hosts
 * (src/node) of `app` (rslock, or rs once PRISM-RS is hosted), each on its own in-memory region with
 * an eager-drain NIC (as the in-process rows) and its own free loopback port. One process for all
 * replicas: on a 2-core machine more processes would only add scheduling noise; each replica still
 * has its own region, NIC and TCP server. Prints one JSON line {ports} once all listen; SIGTERM
 * closes everything and exits 0.
 */
import { createPrng, seededEntropy } from '../pmem/index.js';
import { appByName, NodeHost } from '../src/node/index.js';
import { exitWithParent } from './child.js';

exitWithParent();

const { app, nodes, appOptions, seed } = JSON.parse(process.argv[2] ?? '{}') as { app: string; nodes: number; appOptions: Record<string, unknown>; seed: number };
const a = appByName(app);
const sizeBytes = Math.ceil(a.minRegionBytes(a.resolveOptions(appOptions)) / 4096) * 4096 + 4096;
const hosts: NodeHost[] = [];
for (let i = 0; i < nodes; i++) {
  hosts.push(
    await NodeHost.start({
      app,
      appOptions,
      pmPath: undefined,
      sizeBytes,
      nodeId: `bench-${app}-${i}`,
      region: { entropy: seededEntropy(createPrng(seed * 97 + i)) },
      nic: { drain: 'eager' },
      entropy: seededEntropy(createPrng(seed * 89 + i)),
    }),
  );
}
// The handler before the ready line: a SIGTERM sent on reading it must find it (until a listener
// exists the kernel's default action kills the process).
process.on('SIGTERM', () => {
  void Promise.all(hosts.map((h) => h.close())).then(() => process.exit(0));
});
process.stdout.write(`${JSON.stringify({ ports: hosts.map((h) => h.address().port) })}\n`);
