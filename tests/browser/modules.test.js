// The two wasm modules (issue 12): a page downloads the default one (CPU, WebGPU, Arrow IPC)
// unless it uses WebGL2, whose module replaces the default one only while nothing was made
// with it. Each case is a fresh page of headless Chromium importing dist/web/index.js; the
// modules downloaded are told apart by their bytes.
import {test} from 'node:test';
import assert from 'node:assert/strict';
import {readFileSync} from 'node:fs';
import {checkoutRoot, launchChromium, serveCheckout} from '../../scripts/browser.js';

const modules = {
  default: readFileSync(`${checkoutRoot}dist/wasm/gputable_bg.wasm`),
  webgl: readFileSync(`${checkoutRoot}dist/wasm-webgl/gputable_bg.wasm`)
};

/** Runs `body(gt)` in a fresh page; its result and the wasm modules the page downloaded. */
async function inPage(browser, origin, body) {
  const page = await browser.newPage();
  const wasm = [];
  page.on('response', response => {
    if (response.headers()['content-type'] === 'application/wasm') wasm.push(response.body());
  });
  try {
    await page.goto(`${origin}/package.json`);
    const result = await page.evaluate(`(async () => {
      const gt = await import('/dist/web/index.js');
      const sum4 = async device => {
        const x = gt.sum(gt.GPUTableEvaluator.fromArray(new Float32Array([1, 2, 3, 4])));
        const vector = await x.evaluate(device);
        return {device: vector.device.type, total: Array.from(await x.readValue()), kernels: device.stats.kernels};
      };
      return (${body})(gt, sum4);
    })()`);
    const downloaded = (await Promise.all(wasm)).map(bytes =>
      Object.keys(modules).find(name => modules[name].equals(bytes)) ?? `${bytes.length} unknown bytes`);
    return {result, downloaded};
  } finally {
    await page.close();
  }
}

test('a page loads the WebGL2 module only when it uses WebGL2, and never mixes the two', {timeout: 300_000}, async () => {
  const server = await serveCheckout();
  const origin = `http://127.0.0.1:${server.address().port}`;
  const browser = await launchChromium();
  const onWebGpu = {device: 'webgpu', total: [10]};
  const onWebGl = {device: 'webgl', total: [10]};
  const ran = ({device, total, kernels}) => {
    assert.ok(kernels >= 1, `${kernels} kernels ran on ${device}`);
    return {device, total};
  };
  try {
    // The default import: CPU and WebGPU from the default module alone.
    let {result, downloaded} = await inPage(browser, origin, async (gt, sum4) => {
      await gt.init();
      gt.backendRegistry.add(gt.webgpuBackend);
      gt.backendRegistry.add(gt.webglBackend);
      return sum4(await gt.createDevice({type: 'best'}));
    });
    assert.deepEqual(ran(result), onWebGpu);
    assert.deepEqual(downloaded, ['default'], "'best' found WebGPU: no WebGL2 module");

    // Registered before init(): the WebGL2 module is the one loaded.
    ({result, downloaded} = await inPage(browser, origin, async (gt, sum4) => {
      gt.backendRegistry.add(gt.webglBackend);
      await gt.init();
      return sum4(await gt.createDevice({type: 'webgl'}));
    }));
    assert.deepEqual(ran(result), onWebGl);
    assert.deepEqual(downloaded, ['webgl']);

    // Registered after init(), nothing made yet: 'best' falls back to WebGL2 and its module
    // replaces the default one; two devices asked for at once load it once.
    ({result, downloaded} = await inPage(browser, origin, async (gt, sum4) => {
      await gt.init();
      gt.backendRegistry.add(gt.webglBackend);
      const [best, webgl] = await Promise.all([gt.createDevice({type: 'best'}), gt.createDevice({type: 'webgl'})]);
      return [await sum4(best), await sum4(webgl), await sum4(await gt.createDevice())];
    }));
    assert.deepEqual(result.map(ran), [onWebGl, onWebGl, {device: 'cpu', total: [10]}]);
    assert.deepEqual(downloaded, ['default', 'webgl']);

    // Something made with the default module first: WebGL2 is refused with what to do,
    // and what was made still works.
    ({result, downloaded} = await inPage(browser, origin, async gt => {
      await gt.init();
      const x = gt.GPUTableEvaluator.fromArray(new Float32Array([1, 2]));
      gt.backendRegistry.add(gt.webglBackend);
      const refusal = error => ({code: error.code, message: error.message});
      const refused = await gt.createDevice({type: 'webgl'}).then(() => null, refusal);
      // 'best' (no WebGPU registered) reports it rather than passing over WebGL2 for the CPU.
      const best = await gt.createDevice({type: 'best'}).then(device => device.type, refusal);
      return {refused, best, doubled: Array.from(await gt.add(x, x).readValue())};
    }));
    assert.equal(result.refused?.code, 'BACKEND_UNAVAILABLE');
    assert.match(result.refused.message, /backendRegistry\.add\(webglBackend\) before `await init\(\)`/);
    assert.deepEqual(result.best, result.refused);
    assert.deepEqual(result.doubled, [2, 4]);
    assert.deepEqual(downloaded, ['default']);

    // Asked for before init(): refused like any call before it, and nothing is loaded
    // behind init()'s back.
    ({result, downloaded} = await inPage(browser, origin, async (gt, sum4) => {
      gt.backendRegistry.add(gt.webglBackend);
      const early = await gt.createDevice({type: 'webgl'}).then(() => null, error => error.code);
      await gt.init();
      return {early, after: await sum4(await gt.createDevice({type: 'webgl'}))};
    }));
    assert.equal(result.early, 'BACKEND_UNAVAILABLE');
    assert.deepEqual(ran(result.after), onWebGl);
    assert.deepEqual(downloaded, ['webgl']);

    // Registered first but init() given only the default module's location (code written
    // for one module): that one is loaded, and the WebGL2 one on demand.
    ({result, downloaded} = await inPage(browser, origin, async (gt, sum4) => {
      gt.backendRegistry.add(gt.webglBackend);
      await gt.init('/dist/wasm/gputable_bg.wasm');
      return sum4(await gt.createDevice({type: 'webgl'}));
    }));
    assert.deepEqual(ran(result), onWebGl);
    assert.deepEqual(downloaded, ['default', 'webgl']);
  } finally {
    await browser.close();
    server.close();
  }
});
