// esbuild leaves the glue's `new URL('…wasm', import.meta.url)` alone and does not ship the
// files: import the package's 'gputable/wasm' and 'gputable/wasm-webgl' exports with the
// `file` loader, which copies each module beside the bundle and gives its path, and pass
// them to init(). The WebGL2 one is fetched only when the WebGL2 backend is used.
import * as gt from 'gputable';
import wasmPath from 'gputable/wasm';
import webglWasmPath from 'gputable/wasm-webgl';
import {registerWebGlIfAsked, run} from '../app.js';

registerWebGlIfAsked(gt);
await gt.init(new URL(wasmPath, import.meta.url), new URL(webglWasmPath, import.meta.url));
document.getElementById('out').textContent = JSON.stringify(await run(gt));
