// What `npm pack` puts in the tarball (scripts skipped: `prepack` builds dist/, which the
// test run has built already): the code, both wasm modules, the declarations and the
// license; and the package's metadata (issue 12: a clean clone packed a 14 kB package with
// no code and no LICENSE).

import {test} from 'node:test';
import assert from 'node:assert/strict';
import {execFileSync} from 'node:child_process';
import {readFileSync} from 'node:fs';

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
  assert.equal(pkg.scripts.prepack, 'bash scripts/build.sh');
  assert.equal(pkg.license, 'MIT');
  assert.match(readFileSync(new URL('LICENSE', root), 'utf8'), /^MIT License/);
  for (const target of Object.values(pkg.exports).flatMap(e => (typeof e === 'string' ? [e] : Object.values(e)))) {
    assert.ok(files.has(target.replace(/^\.\//, '')), `the export ${target} is not in the tarball`);
  }
});
