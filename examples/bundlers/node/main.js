// A bundled Node app: the bundle is no longer beside the package's wasm module, so the
// module is copied beside the bundle (esbuild's `file` loader) and given to init().
import * as gt from 'gputable';
import wasmPath from 'gputable/wasm';
import {run} from '../app.js';

await gt.init(new URL(wasmPath, import.meta.url));
console.log(JSON.stringify(await run(gt, ['cpu'])));
