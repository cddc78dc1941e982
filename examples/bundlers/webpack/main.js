// webpack 5 ships the wasm modules by itself: each glue's `new URL('…wasm', import.meta.url)`
// is an asset module, so init() needs no argument. The WebGL2 module's glue is a chunk of
// its own, loaded only when the WebGL2 backend is used.
import * as gt from 'gputable';
import {registerWebGlIfAsked, run} from '../app.js';

registerWebGlIfAsked(gt);
await gt.init();
document.getElementById('out').textContent = JSON.stringify(await run(gt));
