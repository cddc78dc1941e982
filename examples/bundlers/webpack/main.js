// webpack 5 ships the wasm module by itself: the glue's `new URL('…wasm', import.meta.url)`
// is an asset module, so init() needs no argument.
import * as gt from 'gputable';
import {run} from '../app.js';

await gt.init();
const results = await run(gt, ['cpu', 'webgpu', 'webgl']);
document.getElementById('out').textContent = JSON.stringify(results);
