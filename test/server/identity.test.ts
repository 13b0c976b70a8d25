// Over TCP (issue 15): a raw peer whose Hello names a victim's client id, without the victim's
// secret, gets a Goodbye PMRPC_ERR_CLIENT_AUTH and cannot write under it (the victim's state is
// untouched and it goes on); RemoteRpcClient.reconnect presents the secret; close() says goodbye,
// which gives the slot back.
import t from 'tap';
import { createPrng, seededEntropy } from '../../pmem/index.js';
import { NodeHost } from '../../src/node/index.js';
import { TcpLink } from '../../src/transport/index.js';
import { encodeHelloPayload, METHOD, type RpcAppServer } from '../../src/apps/rpc/index.js';
import { RemoteRpcClient } from '../../src/server/index.js';

const SEED = Number(process.env.PMRPC_SEED ?? 1);
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/server/identity.test.ts)`);

t.test('a takeover attempt over TCP is refused with a code; reconnect with the secret works; close() says goodbye', async (t) => {
  const node = await NodeHost.start<RpcAppServer>({ app: 'rpc', pmPath: undefined, sizeBytes: 1 << 20, entropy: seededEntropy(createPrng(SEED)) });
  t.teardown(() => node.close());
  const { port } = node.address();
  const victim = await RemoteRpcClient.connect({ port });
  await victim.rpc.call(METHOD, new Uint8Array([1, 2, 3])).result;
  const store = node.server.store;
  const applied = store.conn.appliedSeq(victim.clientId);
  const digestCount = store.appView.loadU64(0);
  for (const hello of [{ clientId: victim.clientId }, { clientId: victim.clientId, secret: Buffer.alloc(32, 9).toString('base64url') }]) {
    await t.rejects(TcpLink.connect({ port, hello: encodeHelloPayload(hello) }), { code: 'PMRPC_ERR_CLIENT_AUTH' }, JSON.stringify(hello));
  }
  t.equal(store.conn.appliedSeq(victim.clientId), applied, 'the victim\'s applied sequence is untouched');
  t.equal(store.appView.loadU64(0), digestCount, 'nothing was written under the victim\'s id');
  await victim.rpc.call(METHOD, new Uint8Array([4])).result;
  t.ok(victim.connected, 'the victim\'s connection was not taken over');
  await victim.reconnect();
  await victim.rpc.call(METHOD, new Uint8Array([5])).result;
  t.equal(store.conn.appliedSeq(victim.clientId), applied + 2, 'its requests, once each');
  const id = victim.clientId;
  await victim.close();
  t.notOk(store.conn.has(id), 'close() said goodbye: the slot is free');
  t.same(node.server.rpc.releases, { goodbye: 1, lease: 0 });
});
