// Node entry point: the wasm module is loaded synchronously on import.
import {readFileSync} from 'node:fs';
import {initSync} from '../wasm/gputable.js';
import {markWasmLoaded} from '../errors.js';

initSync({module: readFileSync(new URL('../wasm/gputable_bg.wasm', import.meta.url))});
markWasmLoaded();

export * from '../core.js';

/** No-op in Node (the module is ready on import); kept so code runs unchanged in both. */
export async function init() {}
