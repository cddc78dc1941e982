// The demos' random numbers in [0, 1): xorshift32 from `seed`, the same on every run.
export function xorshift(seed) {
  let state = seed;
  return () => {
    state ^= state << 13; state ^= state >>> 17; state ^= state << 5;
    return (state >>> 0) / 4294967296;
  };
}
