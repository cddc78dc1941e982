// What every recipe's app does once the module is loaded: a fused graph and a reduction
// evaluated on each device type asked for (the page's `?devices=`, all three by default). It returns what each device computed and which
// device holds the output, so a test can tell a GPU that ran from a CPU fallback.
export async function run(gt, deviceTypes = pageDevices()) {
  const {GPUTableEvaluator, add, multiply, sqrt, sum, createDevice, backendRegistry, webgpuBackend, webglBackend} = gt;
  backendRegistry.add(webgpuBackend);
  backendRegistry.add(webglBackend);
  const results = {};
  for (const type of deviceTypes) {
    const device = await createDevice({type});
    const x = GPUTableEvaluator.fromArray(new Float32Array([1, 4, 9, 16]));
    const fused = add(multiply(sqrt(x), 2), 1);
    const total = sum(fused);
    const vectors = [await fused.evaluate(device), await total.evaluate(device)];
    results[type] = {
      devices: vectors.map(vector => vector.device?.type ?? null),
      kernels: device.stats.kernels,
      uploadBytes: device.stats.uploadBytes,
      fused: Array.from(await fused.readValue()),
      total: Array.from(await total.readValue())
    };
    for (const e of [x, fused, total]) e.destroy();
    device.destroy();
  }
  return results;
}

/** The device types the page's `?devices=` asks for: cpu, webgpu and webgl by default. */
export function pageDevices() {
  return new URLSearchParams(globalThis.location?.search).get('devices')?.split(',') ?? ['cpu', 'webgpu', 'webgl'];
}

/**
 * WebGL2 is in a second wasm module: registered before init(), that module is the one
 * loaded, and a page that never asks for WebGL2 downloads only the default one.
 */
export function registerWebGlIfAsked(gt) {
  if (pageDevices().includes('webgl')) gt.backendRegistry.add(gt.webglBackend);
}
