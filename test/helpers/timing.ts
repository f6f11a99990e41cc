/** Resolves after `ms` milliseconds. */
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Resolves at the start of a fixed rate-limit window of `durationMs` (windows are aligned to the epoch) unless at least
 * `needMs` of the current window is left, so that calls meant to share one window cannot straddle its edge.
 */
export const windowWithRoom = async (durationMs: number, needMs = 300): Promise<void> => {
  const left = durationMs - (Date.now() % durationMs);
  if (left < needMs) await sleep(left + 5);
};
