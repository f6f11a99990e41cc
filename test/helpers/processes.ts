import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { after } from 'node:test';

/**
 * Every child process a test started, killed when the test process exits, even if a hook failed; in a test
 * file run by node's test runner, also once the file's tests have ended. A child left running (a server that
 * was not ready in time, so its test never got to stop it) holds its output pipes open, and with them the test
 * process and its file, which would otherwise never end.
 */
const children = new Set<ChildProcess>();
const killChildren = () => {
  for (const c of children) c.kill('SIGKILL');
};
process.on('exit', killChildren);
// Only under the test runner: elsewhere (bench/) a hook would start a test run of its own.
if (process.env.NODE_TEST_CONTEXT) after(killChildren);

/** Registers a child process for the exit sweep; it is forgotten when it exits by itself. */
export function reapOnExit(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/**
 * The start of the system's ephemeral port range: ports the kernel hands to `listen(0)` and to outgoing
 * connections (to PostgreSQL, Redis, a test's own server…), from 32768 on Linux by default.
 */
function ephemeralStart(): number {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || 32768;
  } catch {
    return 32768;
  }
}
const EPHEMERAL_START = ephemeralStart();

/** Whether a server can listen on 127.0.0.1:`port` right now. */
async function listenable(port: number): Promise<boolean> {
  const srv = createServer();
  const ok = await new Promise<boolean>((resolve) => {
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => resolve(true));
  });
  if (ok) await new Promise<void>((resolve) => srv.close(() => resolve()));
  return ok;
}

/**
 * A TCP port nobody listens on right now, for a process a test starts. Chosen at random below the ephemeral
 * range: a port from `listen(0)` is free only until the kernel hands it out again, to another test's
 * `listen(0)` or to any outgoing connection, and the process meant to take it then fails to start ("already
 * in use"); below the range only another test's choice could take it.
 */
export async function freePort(): Promise<number> {
  const low = Math.min(20_000, EPHEMERAL_START - 2_000);
  for (let attempt = 0; attempt < 50 && low > 1024; attempt++) {
    const port = low + Math.floor(Math.random() * (EPHEMERAL_START - low));
    if (await listenable(port)) return port;
  }
  const srv = createServer();
  await new Promise<void>((resolve, reject) => {
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', resolve);
  });
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}
