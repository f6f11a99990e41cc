import type { ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';

/** Every child process a test started, killed when the test process exits, even if a hook failed. */
const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});

/** Registers a child process for the exit sweep; it is forgotten when it exits by itself. */
export function reapOnExit(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/** A TCP port nobody listens on right now. */
export async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve, reject) => {
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', resolve);
  });
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}
