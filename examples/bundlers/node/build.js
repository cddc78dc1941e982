// node build.js: the same as
// esbuild main.js --bundle --platform=node --format=esm --loader:.wasm=file --outdir=dist
import * as esbuild from 'esbuild';

await esbuild.build({
  absWorkingDir: new URL('.', import.meta.url).pathname,
  entryPoints: ['main.js'],
  bundle: true,
  platform: 'node',
  format: 'esm',
  loader: {'.wasm': 'file'},
  outdir: 'dist'
});
