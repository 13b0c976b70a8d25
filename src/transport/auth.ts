/** Who may reach a server: loopback detection (binding elsewhere needs a token) and the token comparison. */
import { createHash, timingSafeEqual } from 'node:crypto';
import net from 'node:net';

const loopback = new net.BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');

/** Whether `host` is a loopback address (127.0.0.0/8, ::1, ::ffff:127.x.x.x) or `localhost`. */
export function isLoopbackHost(host: string): boolean {
  if (host === 'localhost') return true;
  const family = net.isIP(host);
  if (family === 4) return loopback.check(host, 'ipv4');
  if (family === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(host);
    if (mapped) return loopback.check(mapped[1]!, 'ipv4');
    return loopback.check(host, 'ipv6');
  }
  return false;
}

/** Constant-time token comparison: hashing first makes the time independent of the lengths too. */
export function tokenEquals(a: string, b: string): boolean {
  const h = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();
  return timingSafeEqual(h(a), h(b));
}
