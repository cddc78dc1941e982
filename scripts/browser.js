// Shared by the demo server, the browser tests and the WebGPU benchmark: a static server
// for the checkout and headless Chromium with WebGPU (the system's, via playwright-core).
import {createServer} from 'node:http';
import {readFile} from 'node:fs/promises';
import {extname, join, normalize} from 'node:path';

export const checkoutRoot = new URL('..', import.meta.url).pathname;

const TYPES = {'.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm', '.json': 'application/json'};

/** Serves `root` (the checkout) on 127.0.0.1 (`port` 0: any free port); resolves to the server. */
export function serveCheckout(port = 0, root = checkoutRoot) {
  const server = createServer(async (request, response) => {
    const path = normalize(decodeURIComponent(new URL(request.url, 'http://x').pathname));
    const file = join(root, path.endsWith('/') ? `${path}index.html` : path);
    if (!file.startsWith(root)) {
      response.writeHead(403).end();
      return;
    }
    let body;
    try {
      body = await readFile(file);
    } catch {
      response.writeHead(404).end('not found');
      return;
    }
    response.writeHead(200, {'content-type': TYPES[extname(file)] ?? 'application/octet-stream', 'content-length': body.length}).end(body);
  });
  return new Promise(resolve => server.listen(port, '127.0.0.1', () => resolve(server)));
}

/**
 * Headless Chromium with WebGPU enabled (SwiftShader where there is no GPU). `canvas`: a
 * WebGPU canvas can be presented too. By default headless Chromium composites with ANGLE's
 * GL SwiftShader while Dawn renders on Vulkan SwiftShader, and the first frame presented
 * loses the device ("A valid external Instance reference no longer exists"); compositing on
 * Vulkan SwiftShader as well fixes it (found in visgl/luma.gl#2874).
 */
export async function launchChromium({canvas = false} = {}) {
  const {chromium} = await import('playwright-core');
  const presenting = canvas
    ? ['--use-angle=swiftshader', '--enable-unsafe-swiftshader', '--ignore-gpu-blocklist', '--enable-gpu',
      '--enable-features=Vulkan', '--use-vulkan=swiftshader']
    : [];
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--enable-unsafe-webgpu', '--disable-background-networking', '--disable-component-update',
      '--disable-sync', '--disable-quic', '--no-first-run', ...presenting]
  });
}
