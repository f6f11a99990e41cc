import type { PageRouter } from '../context.ts';

/** (being written) */
export default function permissionPages(_router: PageRouter): void {}
