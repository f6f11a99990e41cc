/** A deterministic pseudo-random sequence in [0, 1) (an LCG), so a failing run can be replayed from its seed. */
export const prng = (seed: number) => () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
  return seed / 2 ** 31;
};
