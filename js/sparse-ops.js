// How sparse operands combine with the ops of core.js (api.md "Sparse arrays"): sparse.js
// fills this in when it loads, core.js consults it, and neither exports it.
export const sparseOps = {is: () => false};
