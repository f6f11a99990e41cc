import { spawn, type ChildProcess } from 'node:child_process';
import { REPO_ROOT } from './repo.ts';
import { reapOnExit } from './processes.ts';

/** The test process' environment without any Keyhold setting, plus `vars`: a server sees only what a test gives it. */
export function serverEnv(vars: Record<string, string>): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of Object.keys(env)) {
    if (/^(KEYHOLD_|HOST$|PORT$|LOG_LEVEL$|DATABASE_URL$|REDIS_URL$)/.test(name)) delete env[name];
  }
  return { ...env, ...vars };
}

/**
 * A server process (`src/main.ts`, or `npm start` with `viaNpm`) with its output kept. `npm start` runs in a
 * process group of its own, as a service manager or the contract smoke runs it.
 */
export class ServerProcess {
  readonly proc: ChildProcess;
  stdout = '';
  stderr = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(env: NodeJS.ProcessEnv, opts: { viaNpm?: boolean } = {}) {
    const [command, args] = opts.viaNpm
      ? ['npm', ['start', '--silent']]
      : [process.execPath, ['--disable-warning=ExperimentalWarning', 'src/main.ts']];
    this.proc = spawn(command, args, { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: opts.viaNpm });
    reapOnExit(this.proc);
    this.proc.stdout!.on('data', (chunk: Buffer) => {
      this.stdout += chunk;
    });
    this.proc.stderr!.on('data', (chunk: Buffer) => {
      this.stderr += chunk;
    });
    this.exited = new Promise((resolve) =>
      this.proc.once('exit', (code, signal) => {
        resolve({ code, signal });
      }),
    );
  }

  get output(): string {
    return this.stdout + this.stderr;
  }

  /** Resolves once stdout has a line matching `pattern`; rejects if the process exits first or `timeoutMs` pass. */
  async waitFor(pattern: RegExp, timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let exited = false;
    void this.exited.then(() => {
      exited = true;
    });
    while (!pattern.test(this.stdout)) {
      if (exited || Date.now() > deadline) throw new Error(`no ${pattern} (${exited ? 'exited' : 'timed out'}):\n${this.output}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  /** The exit, within `timeoutMs` (then SIGKILL and a failure). */
  async exit(timeoutMs = 20_000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        this.proc.kill('SIGKILL');
        reject(new Error(`did not exit within ${timeoutMs} ms:\n${this.output}`));
      }, timeoutMs);
    });
    try {
      return await Promise.race([this.exited, late]);
    } finally {
      clearTimeout(timer);
    }
  }
}
