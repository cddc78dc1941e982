// esbuild leaves the glue's `new URL('…wasm', import.meta.url)` alone and does not ship the
// file: import the package's 'gputable/wasm' export with the `file` loader, which copies
// the module beside the bundle and gives its path, and pass that to init().
import * as gt from 'gputable';
import wasmPath from 'gputable/wasm';
import {run} from '../app.js';

await gt.init(new URL(wasmPath, import.meta.url));
const results = await run(gt, ['cpu', 'webgpu', 'webgl']);
document.getElementById('out').textContent = JSON.stringify(results);
