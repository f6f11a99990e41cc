// `npm run bench`: the load benchmarks. The verification benchmark (real server, load from a separate
// process, baseline route in the same run) arrives with keys.verifyKey; until then there is nothing to measure.
console.log('keyhold bench: no benchmarks yet (the keys.verifyKey load benchmark arrives with verification)');
