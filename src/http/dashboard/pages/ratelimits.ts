import type { PageRouter } from '../context.ts';

/** (being written) */
export default function ratelimitPages(_router: PageRouter): void {}
