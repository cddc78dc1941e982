// With `@webgpu/types` in the compilation, the resident WebGPU handles are the real types: a
// renderer binds a vector's buffer as a vertex buffer on the library's device.
import {GPUTableEvaluator as E, createDevice} from 'gputable';

export async function draw(pass: GPURenderPassEncoder) {
  const device = await createDevice({type: 'webgpu'});
  const points = await E.fromArray(new Float32Array([0, 0, 1, 1]), {size: 2}).evaluate(device);
  const gpuDevice: GPUDevice | undefined = device.gpuDevice;
  const buffer: GPUBuffer | undefined = points.data[0].buffer.gpuBuffer;
  if (!gpuDevice || !buffer) throw new Error('not on WebGPU');
  pass.setVertexBuffer(0, buffer);
  const uniforms = gpuDevice.createBuffer({size: 16, usage: GPUBufferUsage.UNIFORM});
  // @ts-expect-error: a GPUDevice has no such method
  gpuDevice.createTexel();
  return uniforms;
}
