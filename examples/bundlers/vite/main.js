// Vite: `?url` makes Vite ship each wasm module and give its URL to init(): the default one
// and the one with WebGL2, fetched only when the WebGL2 backend is used.
import * as gt from 'gputable';
import wasmUrl from 'gputable/wasm?url';
import webglWasmUrl from 'gputable/wasm-webgl?url';
import {registerWebGlIfAsked, run} from '../app.js';

registerWebGlIfAsked(gt);
await gt.init(wasmUrl, webglWasmUrl);
document.getElementById('out').textContent = JSON.stringify(await run(gt));
