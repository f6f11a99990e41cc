import type { PageRouter } from '../context.ts';

/** (being written) */
export default function auditLogPages(_router: PageRouter): void {}
