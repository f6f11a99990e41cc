/** The services a Keyhold process depends on at run time. */
export type Dependency = 'store' | 'redis';

export interface DependencyState {
  /** Whether its last call succeeded (true until a call fails). */
  up: boolean;
  /** Failed calls since the process started. */
  errors: number;
  /** Outages (up → down transitions) since the process started. */
  outages: number;
  /** When `up` last changed (epoch ms). */
  since: number;
}

/**
 * What this process knows about its dependencies, from the outcome of the calls it makes: read by
 * /metrics and GET /v1/readiness. `recordError` and `recordSuccess` say when an outage starts or ends, so a
 * caller can log once per outage rather than once per failed request.
 */
export class DependencyHealth {
  readonly #states = new Map<Dependency, DependencyState>();

  /** Counts a failed call; true when it starts an outage. */
  recordError(dependency: Dependency, now = Date.now()): boolean {
    const state = this.#state(dependency, now);
    state.errors++;
    if (!state.up) return false;
    state.up = false;
    state.outages++;
    state.since = now;
    return true;
  }

  /** Notes a successful call; true when it ends an outage. */
  recordSuccess(dependency: Dependency, now = Date.now()): boolean {
    const state = this.#state(dependency, now);
    if (state.up) return false;
    state.up = true;
    state.since = now;
    return true;
  }

  /** The state of every dependency this process has used. */
  snapshot(): Partial<Record<Dependency, Readonly<DependencyState>>> {
    return Object.fromEntries([...this.#states].map(([d, s]) => [d, { ...s }]));
  }

  #state(dependency: Dependency, now: number): DependencyState {
    let state = this.#states.get(dependency);
    if (!state) {
      state = { up: true, errors: 0, outages: 0, since: now };
      this.#states.set(dependency, state);
    }
    return state;
  }
}
