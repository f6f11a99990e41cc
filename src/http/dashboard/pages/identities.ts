import type { PageRouter } from '../context.ts';

/** (being written) */
export default function identityPages(_router: PageRouter): void {}
