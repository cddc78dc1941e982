// The bundler recipes of examples/bundlers, proven as a user would use them (issue 12:
// esbuild and Node bundles did not ship the wasm module and failed with a plain 404). The
// checkout is packed (dist/ is built by the test run), the tarball installed into a
// project of its own (target/recipes, so the bundlers resolve from this checkout's
// node_modules while 'gputable' resolves to the installed tarball), each recipe built, and
// the pages run in headless Chromium on the CPU, WebGPU and WebGL2, the Node bundle in Node.
// A page that does not use WebGL2 must not download its module.

import {test} from 'node:test';
import assert from 'node:assert/strict';
import {execFileSync} from 'node:child_process';
import {cpSync, mkdirSync, readFileSync, rmSync, writeFileSync} from 'node:fs';
import {checkoutRoot, launchChromium, serveCheckout} from '../../scripts/browser.js';

const project = `${checkoutRoot}target/recipes/`;
const expected = {fused: [3, 5, 7, 9], total: [24]};

function installPackedCheckout() {
  rmSync(project, {recursive: true, force: true});
  mkdirSync(project, {recursive: true});
  cpSync(`${checkoutRoot}examples/bundlers`, project, {recursive: true});
  const [packed] = JSON.parse(execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', project],
    {cwd: checkoutRoot, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore']}));
  writeFileSync(`${project}package.json`, JSON.stringify({name: 'gputable-recipes', private: true, type: 'module'}));
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', `./${packed.filename}`],
    {cwd: project, stdio: ['ignore', 'ignore', 'inherit']});
}

async function buildRecipes() {
  const {build} = await import('vite');
  await build({root: `${project}vite`, logLevel: 'warn'});
  const {default: webpack} = await import('webpack');
  const {default: webpackConfig} = await import(`${project}webpack/webpack.config.js`);
  await new Promise((resolve, reject) => webpack(webpackConfig, (error, stats) => {
    if (error || stats.hasErrors()) reject(error ?? new Error(stats.toString('errors-only')));
    else resolve();
  }));
  for (const recipe of ['esbuild', 'node']) {
    execFileSync(process.execPath, ['build.js'], {cwd: `${project}${recipe}`, stdio: ['ignore', 'inherit', 'inherit']});
  }
}

function assertRan(results, deviceTypes, recipe) {
  assert.deepEqual(Object.keys(results), deviceTypes, recipe);
  for (const type of deviceTypes) {
    const result = results[type];
    assert.deepEqual(result.devices, [type, type], `${recipe} on ${type}: where the outputs live`);
    assert.deepEqual({fused: result.fused, total: result.total}, expected, `${recipe} on ${type}`);
    if (type !== 'cpu') {
      // The GPU did the work: the input went up to it and its kernels ran.
      assert.ok(result.kernels >= 2, `${recipe} on ${type}: ${result.kernels} kernels`);
      assert.ok(result.uploadBytes >= 16, `${recipe} on ${type}: ${result.uploadBytes} bytes uploaded`);
    }
  }
}

test('the Vite, webpack, esbuild and Node bundle recipes build from the packed package and run', {timeout: 600_000}, async () => {
  installPackedCheckout();
  await buildRecipes();

  const node = execFileSync(process.execPath, ['dist/main.js'], {cwd: `${project}node`, encoding: 'utf8'});
  assertRan(JSON.parse(node), ['cpu'], 'the Node bundle');

  const server = await serveCheckout(0, project);
  const served = `http://127.0.0.1:${server.address().port}/`;
  // Vite's dev server too, which pre-bundles dependencies its own way.
  const {createServer} = await import('vite');
  const viteDev = await createServer({root: `${project}vite`, logLevel: 'warn', server: {host: '127.0.0.1', port: 0}});
  await viteDev.listen();
  const browser = await launchChromium();
  try {
    const pages = [['vite', `${served}vite/dist/index.html`], ['webpack', `${served}webpack/index.html`],
      ['esbuild', `${served}esbuild/index.html`], ['the vite dev server', viteDev.resolvedUrls.local[0]]];
    // Each page twice: without WebGL2 it downloads the default module only, with it the
    // WebGL2 module only (registered before init()). Told apart by their bytes.
    const installed = `${project}node_modules/gputable/dist/`;
    const modules = {default: readFileSync(`${installed}wasm/gputable_bg.wasm`), webgl: readFileSync(`${installed}wasm-webgl/gputable_bg.wasm`)};
    const runs = [[['cpu', 'webgpu'], ['default']], [['cpu', 'webgpu', 'webgl'], ['webgl']]];
    for (const [recipe, url] of pages) {
      for (const [deviceTypes, downloaded] of runs) {
        const label = `${recipe} with ${deviceTypes.join(', ')}`;
        const tab = await browser.newPage();
        const wasm = [];
        // A page error or a file the bundle did not ship fails at once.
        const failed = new Promise(resolve => {
          tab.on('pageerror', error => resolve(error.message));
          tab.on('response', response => {
            if (response.status() >= 400) resolve(`${response.status()} ${response.url()}`);
            else if (response.headers()['content-type'] === 'application/wasm') wasm.push(response.body());
          });
        });
        await tab.goto(`${url}?devices=${deviceTypes.join(',')}`);
        const ran = tab.waitForFunction(() => document.getElementById('out')?.textContent !== 'running…', null, {timeout: 120_000});
        assert.equal(await Promise.race([ran.then(() => null), failed]), null, label);
        assertRan(JSON.parse(await tab.textContent('#out')), deviceTypes, label);
        const names = (await Promise.all(wasm)).map(body => Object.keys(modules).find(name => modules[name].equals(body)) ?? `${body.length} unknown bytes`);
        assert.deepEqual(names, downloaded, `${label}: the wasm modules downloaded`);
        await tab.close();
      }
    }
  } finally {
    await browser.close();
    await viteDev.close();
    server.close();
  }
});
