import type { PageRouter } from '../context.ts';

/** (being written) */
export default function keyPages(_router: PageRouter): void {}
