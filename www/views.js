// What the demo page draws: the trips as points (on WebGPU straight from the library's
// resident buffer, elsewhere from the values read back), and bar charts.

/** The plotted area in km, centred on the city: pickups lie in x -15..15, y -10..10. */
export const EXTENT = {x: 16, y: 11};
const BACKGROUND = [0.07, 0.08, 0.1];

// Fare per km 0..6 runs from blue to amber.
const RAMP_WGSL = `
fn ramp(perKm: f32) -> vec3f {
  let t = clamp(perKm / 6.0, 0.0, 1.0);
  return mix(vec3f(0.2, 0.5, 1.0), vec3f(1.0, 0.7, 0.15), t);
}`;

const pointsWgsl = intensity => `${RAMP_WGSL}
struct Out { @builtin(position) position: vec4f, @location(0) color: vec3f };
@vertex fn vs(@location(0) point: vec3f) -> Out {
  var out: Out;
  out.position = vec4f(point.x / ${EXTENT.x.toFixed(1)}, point.y / ${EXTENT.y.toFixed(1)}, 0.0, 1.0);
  out.color = ramp(point.z);
  return out;
}
@fragment fn fs(in: Out) -> @location(0) vec4f { return vec4f(in.color * ${intensity.toFixed(3)}, 1.0); }`;

/** How much one point adds: fewer points, each brighter. */
export const intensityFor = rows => Math.min(0.6, 0.15 * Math.sqrt(1e6 / Math.max(rows, 1)));

/**
 * Draws points on `canvas` with the library's `GPUDevice`, binding the output vector's
 * buffer as the vertex buffer: the rows never leave the GPU. Additive blending shows density.
 */
export class WebGpuPoints {
  constructor(canvas, device, intensity) {
    this.gpu = device.gpuDevice;
    this.context = canvas.getContext('webgpu');
    this.format = navigator.gpu.getPreferredCanvasFormat();
    this.context.configure({device: this.gpu, format: this.format, alphaMode: 'opaque'});
    const module = this.gpu.createShaderModule({code: pointsWgsl(intensity)});
    const add = {srcFactor: 'one', dstFactor: 'one', operation: 'add'};
    this.pipeline = this.gpu.createRenderPipeline({
      layout: 'auto',
      vertex: {module, entryPoint: 'vs', buffers: [{arrayStride: 12, attributes: [{shaderLocation: 0, offset: 0, format: 'float32x3'}]}]},
      fragment: {module, entryPoint: 'fs', targets: [{format: this.format, blend: {color: add, alpha: add}}]},
      primitive: {topology: 'point-list'}
    });
  }
  /**
   * `points`: a GPUVector of float32 x 3 rows on the library's WebGPU device. One chunk (a
   * filter's output) is drawn by `drawIndirect` from its count on the device.
   */
  draw(points) {
    const encoder = this.gpu.createCommandEncoder();
    const pass = encoder.beginRenderPass({colorAttachments: [{
      view: this.context.getCurrentTexture().createView(),
      clearValue: {r: BACKGROUND[0], g: BACKGROUND[1], b: BACKGROUND[2], a: 1}, loadOp: 'clear', storeOp: 'store'
    }]});
    pass.setPipeline(this.pipeline);
    const chunks = points.data.filter(chunk => chunk.buffer.gpuBuffer);
    if (chunks.length === 1 && points.drawIndirect) {
      pass.setVertexBuffer(0, chunks[0].buffer.gpuBuffer);
      pass.drawIndirect(points.drawIndirect, 0);
    } else {
      for (const chunk of chunks) {
        pass.setVertexBuffer(0, chunk.buffer.gpuBuffer);
        pass.draw(chunk.length);
      }
    }
    pass.end();
    this.gpu.queue.submit([encoder.finish()]);
    return this.gpu.queue.onSubmittedWorkDone();
  }
}

/** The same picture drawn on a 2D canvas from values read back (the WebGL2 and CPU devices). */
export class CanvasPoints {
  constructor(canvas, intensity) {
    this.canvas = canvas;
    this.intensity = intensity;
    this.context = canvas.getContext('2d');
    // Per pixel colour sums and the image, kept from draw to draw.
    this.sums = new Float32Array(canvas.width * canvas.height * 3);
    this.image = this.context.createImageData(canvas.width, canvas.height);
  }
  /** `values`: float32 x 3 rows (x, y, fare per km). */
  async draw(values) {
    const {width, height} = this.canvas;
    const {sums, image, intensity} = this;
    sums.fill(0);
    for (let i = 0; i < values.length; i += 3) {
      const px = Math.floor((values[i] / EXTENT.x + 1) * 0.5 * width);
      const py = Math.floor((1 - values[i + 1] / EXTENT.y) * 0.5 * height);
      if (px < 0 || py < 0 || px >= width || py >= height) continue;
      const t = Math.min(Math.max(values[i + 2] / 6, 0), 1);
      const p = (py * width + px) * 3;
      sums[p] += intensity * (0.2 + 0.8 * t);
      sums[p + 1] += intensity * (0.5 + 0.2 * t);
      sums[p + 2] += intensity * (1 - 0.85 * t);
    }
    for (let p = 0, q = 0; p < sums.length; p += 3, q += 4) {
      image.data[q] = 255 * Math.min(1, BACKGROUND[0] + sums[p]);
      image.data[q + 1] = 255 * Math.min(1, BACKGROUND[1] + sums[p + 1]);
      image.data[q + 2] = 255 * Math.min(1, BACKGROUND[2] + sums[p + 2]);
      image.data[q + 3] = 255;
    }
    this.context.putImageData(image, 0, 0);
  }
}

/**
 * Vertical bars of `values` with `labels` under them on a 2D canvas; `log` scales the bars
 * logarithmically around 1 (ratios), marking 1.
 */
export function drawBars(canvas, values, labels, {color = '#4d8dff', log = false, format = v => String(v)} = {}) {
  const context = canvas.getContext('2d');
  const {width, height} = canvas;
  context.clearRect(0, 0, width, height);
  context.font = '11px system-ui, sans-serif';
  const top = 16, bottom = height - 18;
  const scale = log
    ? (() => {
      const reach = Math.max(1, ...values.map(v => Math.abs(Math.log10(v))));
      return v => (bottom + top) / 2 - (Math.log10(v) / reach) * ((bottom - top) / 2);
    })()
    : (() => {
      const most = Math.max(1, ...values);
      return v => bottom - (v / most) * (bottom - top);
    })();
  const base = log ? scale(1) : bottom;
  const slot = width / values.length;
  values.forEach((value, i) => {
    const y = scale(value);
    context.fillStyle = typeof color === 'function' ? color(value) : color;
    context.fillRect(i * slot + 2, Math.min(y, base), Math.max(1, slot - 4), Math.abs(base - y));
    context.fillStyle = '#ccd';
    context.textAlign = 'center';
    if (slot > 18) context.fillText(format(value), (i + 0.5) * slot, Math.min(y, base) - 3);
    context.fillText(labels[i], (i + 0.5) * slot, height - 4);
  });
  if (log) {
    context.strokeStyle = '#889';
    context.beginPath();
    context.moveTo(0, base);
    context.lineTo(width, base);
    context.stroke();
  }
}

/** Horizontal bars of `values`, each with its label before it and `format(value, i)` after. */
export function drawGroups(canvas, values, labels, format) {
  const context = canvas.getContext('2d');
  const {width, height} = canvas;
  context.clearRect(0, 0, width, height);
  context.font = '11px system-ui, sans-serif';
  context.textBaseline = 'middle';
  const labelWidth = 96, textWidth = 118, slot = height / Math.max(values.length, 1);
  const most = Math.max(1, ...values);
  values.forEach((value, i) => {
    const y = (i + 0.5) * slot;
    const bar = (value / most) * (width - labelWidth - textWidth);
    context.fillStyle = '#ccd';
    context.textAlign = 'right';
    context.fillText(labels[i], labelWidth - 6, y);
    context.fillStyle = '#4d8dff';
    context.fillRect(labelWidth, y - slot * 0.35, Math.max(1, bar), slot * 0.7);
    context.fillStyle = '#ccd';
    context.textAlign = 'left';
    context.fillText(format(value, i), labelWidth + bar + 5, y);
  });
}
