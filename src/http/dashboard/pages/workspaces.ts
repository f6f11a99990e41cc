import type { PageRouter } from '../context.ts';

/** (being written) */
export default function workspacePages(_router: PageRouter): void {}
