#!/usr/bin/env node
// The `keyhold` operator CLI. SQLite support in Node is flagged experimental; its warning is noise here.
const emitWarning = process.emitWarning;
process.emitWarning = (warning, ...rest) => {
  const type = typeof rest[0] === 'string' ? rest[0] : rest[0]?.type;
  if (type === 'ExperimentalWarning') return;
  return emitWarning.call(process, warning, ...rest);
};
const { run } = await import('../src/cli/main.ts');
process.exitCode = await run(process.argv.slice(2));
