import type { PageRouter } from '../context.ts';

/** (being written) */
export default function migrationPages(_router: PageRouter): void {}
