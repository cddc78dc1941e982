// What `npm pack` puts in the tarball (scripts skipped: `prepack` builds dist/, which the
// test run has built already): the code, both wasm modules, the declarations and the
// license; and the package's metadata (issue 12: a clean clone packed a 14 kB package with
// no code and no LICENSE). And `git clone && npm pack` itself (issue 37: prepack needed
// esbuild but installed nothing, and shipped unoptimized wasm where binaryen was missing).

import {test} from 'node:test';
import assert from 'node:assert/strict';
import {execFileSync, spawnSync} from 'node:child_process';
import {mkdtempSync, readFileSync, readdirSync, rmSync, utimesSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {fileURLToPath} from 'node:url';

const root = new URL('../../', import.meta.url);

test('npm pack ships the code, both wasm modules, the declarations and the license', () => {
  const [packed] = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'],
    {cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore']}));
  const files = new Set(packed.files.map(f => f.path));
  for (const file of ['LICENSE', 'README.md', 'package.json', 'js/index.d.ts', 'dist/web/index.js',
    'dist/node/index.js', 'dist/core.js', 'dist/bindings.js', 'dist/wasm/gputable.js', 'dist/wasm/gputable_bg.wasm',
    'dist/wasm-webgl/gputable.js', 'dist/wasm-webgl/gputable_bg.wasm']) {
    assert.ok(files.has(file), `${file} is not in the tarball`);
  }
  const pkg = JSON.parse(readFileSync(new URL('package.json', root)));
  assert.equal(pkg.scripts.prepack, 'bash scripts/setup.sh build && bash scripts/build.sh');
  assert.equal(pkg.license, 'MIT');
  assert.match(readFileSync(new URL('LICENSE', root), 'utf8'), /^MIT License/);
  for (const target of Object.values(pkg.exports).flatMap(e => (typeof e === 'string' ? [e] : Object.values(e)))) {
    assert.ok(files.has(target.replace(/^\.\//, '')), `the export ${target} is not in the tarball`);
  }
});

// The clone is of the committed HEAD (what CI tests). It builds in this checkout's cargo
// target directory, reusing the dependencies' builds; its crate has the same fingerprint as
// this checkout's (a path package's hash leaves its path out), so its build would leave the
// checkout's next build taking the clone's wasm and stripped shaders (build.rs writes them
// into the shared OUT_DIR) for fresh: `src/lib.rs` and `build.rs` are touched after it, so
// the next build reruns the build script on this checkout's shaders.
test('a fresh clone packs a working package: prepack installs what its build needs', {timeout: 30 * 60_000}, () => {
  const work = mkdtempSync(join(tmpdir(), 'gputable-pack-'));
  try {
    const clone = join(work, 'clone');
    execFileSync('git', ['clone', '--quiet', fileURLToPath(root), clone]);
    // The checkout's own target folder: the clone compiles only gputable itself, its
    // dependencies' builds are reused (the same versions, features and flags). Cargo locks
    // the folder while it builds.
    const targetDir = process.env.CARGO_TARGET_DIR ?? fileURLToPath(new URL('target', root));
    const env = {...process.env, CARGO_TARGET_DIR: targetDir};
    const packed = spawnSync('npm', ['pack', '--pack-destination', work], {cwd: clone, env, encoding: 'utf8', maxBuffer: 64 << 20});
    const now = new Date();
    for (const file of ['src/lib.rs', 'build.rs']) utimesSync(fileURLToPath(new URL(file, root)), now, now);
    const said = `${packed.stdout}\n${packed.stderr}`;
    assert.equal(packed.status, 0, said);
    assert.match(said, /\[setup\] installing npm packages \(npm ci\)/);
    assert.match(said, /\[build\] wasm-opt -O3 \(npm binaryen, wasm\)/);
    assert.match(said, /\[build\] wasm-opt -O3 \(npm binaryen, wasm-webgl\)/);
    const tarball = readdirSync(work).find(name => name.endsWith('.tgz'));
    assert.ok(tarball, `no tarball in ${readdirSync(work)}`);
    execFileSync('tar', ['xzf', join(work, tarball), '-C', work]);
    // The packed package computes in a Node process of its own.
    const program = `
      import * as gt from ${JSON.stringify(join(work, 'package/dist/node/index.js'))};
      const x = gt.GPUTableEvaluator.fromArray(new Float32Array([1, 2, 3]));
      console.log(Array.from(await gt.add(x, 1).readValue()).join(','));`;
    const ran = execFileSync(process.execPath, ['--input-type=module', '-e', program], {encoding: 'utf8'});
    assert.equal(ran.trim(), '2,3,4');
  } finally {
    rmSync(work, {recursive: true, force: true});
  }
});
