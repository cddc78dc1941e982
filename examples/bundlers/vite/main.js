// Vite: `?url` makes Vite ship the wasm module and give its URL to init().
import * as gt from 'gputable';
import wasmUrl from 'gputable/wasm?url';
import {run} from '../app.js';

await gt.init(wasmUrl);
const results = await run(gt, ['cpu', 'webgpu', 'webgl']);
document.getElementById('out').textContent = JSON.stringify(results);
