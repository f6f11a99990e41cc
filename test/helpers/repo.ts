import { fileURLToPath } from 'node:url';

/** The URL of a file of the repository, given relative to its root: `repoUrl('README.md')`. */
export const repoUrl = (path: string): URL => new URL(`../../${path}`, import.meta.url);

/** The repository's root folder (where package.json is), wherever the test file using it lives. */
export const REPO_ROOT = fileURLToPath(repoUrl(''));
