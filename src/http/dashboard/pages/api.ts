import type { PageRouter } from '../context.ts';

/** (being written) */
export default function apiPages(_router: PageRouter): void {}
