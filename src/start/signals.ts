import { constants } from 'node:os';

/*
 * SIGTERM and SIGINT while the server starts. A process without a handler for them dies at once, but PID 1 (the
 * server in a container) gets no default action: until server.ts registered its graceful stop, which it does
 * once it listens, a `docker stop` during a start (loading some 300 modules, migrations) did nothing for the
 * runtime's 10 s and ended in SIGKILL. `exitOnStopSignalsWhileStarting` (src/main.ts, before anything is
 * loaded) gives PID 1 the ordinary behaviour: exit at once, with the status a shell reports for the signal
 * (143, 130). Nothing is left half done: each migration and the first workspace commit all or nothing, and a
 * start interrupted before them is tried again by the next. `stopExitingOnStopSignals` hands the signals to
 * the graceful stop.
 */
const exitOnSignal = (signal: NodeJS.Signals): never => process.exit(128 + constants.signals[signal]);

export function exitOnStopSignalsWhileStarting(): void {
  process.once('SIGTERM', exitOnSignal);
  process.once('SIGINT', exitOnSignal);
}

export function stopExitingOnStopSignals(): void {
  process.off('SIGTERM', exitOnSignal);
  process.off('SIGINT', exitOnSignal);
}
