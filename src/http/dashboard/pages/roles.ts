import type { PageRouter } from '../context.ts';

/** (being written) */
export default function rolePages(_router: PageRouter): void {}
