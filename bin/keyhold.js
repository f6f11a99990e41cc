#!/usr/bin/env node
// Keyhold's sources are TypeScript run directly by Node 24 (type stripping); older Node cannot load them.
const major = Number(process.versions.node.split('.')[0]);
if (major < 24) {
  process.stderr.write(
    `keyhold: needs Node 24 or newer (this is Node ${process.versions.node}); run it as \`npm run keyhold -- …\` or \`node_modules/.bin/node bin/keyhold.js …\`, which use the Node 24 installed by npm ci\n`,
  );
  process.exit(2);
}
// The `keyhold` operator CLI. SQLite support in Node is flagged experimental; its warning is noise here.
const emitWarning = process.emitWarning;
process.emitWarning = (warning, ...rest) => {
  const type = typeof rest[0] === 'string' ? rest[0] : rest[0]?.type;
  if (type === 'ExperimentalWarning') return;
  return emitWarning.call(process, warning, ...rest);
};
// Node's compile cache keeps the type-stripped and compiled modules from one run to the next (see src/main.ts).
const { enableCompileCache } = await import('node:module');
enableCompileCache();
const { run } = await import('../src/cli/main.ts');
process.exitCode = await run(process.argv.slice(2));
