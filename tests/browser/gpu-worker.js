// A GPU device inside a dedicated worker: evaluates one fused graph and an extent there and
// posts the values back to gpu-suite.js.
import * as gt from '../../dist/web/index.js';

onmessage = async event => {
  try {
    // Registered after init(): on WebGL2 the first device swaps the default module for the
    // WebGL2 one, here inside a worker.
    await gt.init();
    gt.backendRegistry.add(event.data === 'webgl' ? gt.webglBackend : gt.webgpuBackend);
    const device = await gt.createDevice({type: event.data});
    const x = gt.GPUTableEvaluator.fromArray(new Float32Array([1, 4, 9, 16]));
    const fused = gt.add(gt.sqrt(x), 0.5);
    await fused.evaluate(device);
    const range = gt.extent(gt.multiply(x, -2));
    await range.evaluate(device);
    postMessage({type: device.type, fused: Array.from(await fused.readValue()), extent: Array.from(await range.readValue())});
  } catch (error) {
    postMessage({error: `${error.code ?? error.name}: ${error.message}`});
  }
};
