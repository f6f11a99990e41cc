import { constants } from 'node:os';

/*
 * SIGTERM and SIGINT, from the first line of the start to the end of the graceful stop. A process without a
 * handler for them dies at once, but PID 1 (the server in a container) gets no default action: until server.ts
 * had its graceful stop, which it has once it listens, a `docker stop` during a start (loading some 300 modules,
 * migrations) did nothing for the runtime's 10 s and ended in SIGKILL. `exitOnStopSignalsWhileStarting`
 * (src/main.ts, before anything is loaded) gives PID 1 the ordinary behaviour: exit at once, with the status a
 * shell reports for the signal (143, 130). Nothing is left half done: each migration and the first workspace
 * commit all or nothing, and a start interrupted before them is tried again by the next.
 * `handStopSignalsTo` hands the signals to the graceful stop.
 *
 * One listener per signal for the process' whole life: removing the last listener closes node's signal handle,
 * and a signal already received but not yet dispatched is lost with it (seen: a SIGTERM sent just before the
 * hand-over left the server running).
 */
const exitOnSignal = (signal: NodeJS.Signals): never => process.exit(128 + constants.signals[signal]);
let onStopSignal: (signal: NodeJS.Signals) => void = exitOnSignal;
const dispatch = (signal: NodeJS.Signals) => onStopSignal(signal);

export function exitOnStopSignalsWhileStarting(): void {
  process.on('SIGTERM', dispatch);
  process.on('SIGINT', dispatch);
}

/** From now on, SIGTERM and SIGINT call `stop` (the graceful stop) instead of exiting at once. */
export function handStopSignalsTo(stop: (signal: NodeJS.Signals) => void): void {
  onStopSignal = stop;
  // When main.ts did not register (a test building the server in-process), listen now.
  if (!process.listeners('SIGTERM').includes(dispatch)) exitOnStopSignalsWhileStarting();
}
