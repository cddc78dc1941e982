// The browser entry as one minified module: dist/web/index.js with the modules it imports
// statically (our JS and the default module's wasm-bindgen glue) inlined, half the bytes of
// the separate files gzipped. A source map beside it points at those files, which dist keeps
// (the Node entry imports them). The WebGL2 glue stays a module of its own, imported on
// demand.
import * as esbuild from 'esbuild';
import {readFileSync} from 'node:fs';
import {dirname, join, resolve} from 'node:path';
import {fileURLToPath} from 'node:url';

const dist = resolve(dirname(fileURLToPath(import.meta.url)), '../dist');
const glue = join(dist, 'wasm/gputable.js');
// The glue finds its module beside itself; inlined into web/index.js it must look in ../wasm.
// Bundlers that ship `new URL(…, import.meta.url)` assets (webpack) follow this path too.
const OWN_MODULE = `new URL('gputable_bg.wasm', import.meta.url)`;

const moduleBesideEntry = {
  name: 'module-beside-entry',
  setup(build) {
    build.onLoad({filter: /gputable\.js$/}, args => {
      if (args.path !== glue) return undefined;
      const source = readFileSync(glue, 'utf8');
      if (!source.includes(OWN_MODULE)) throw new Error(`the glue no longer locates its module with ${OWN_MODULE}`);
      return {contents: source.replace(OWN_MODULE, `new URL('../wasm/gputable_bg.wasm', import.meta.url)`), loader: 'js'};
    });
  }
};

await esbuild.build({
  entryPoints: [join(dist, 'web/index.js')],
  outfile: join(dist, 'web/index.js'),
  allowOverwrite: true,
  bundle: true,
  minify: true,
  // Error messages name the classes of the values they were given.
  keepNames: true,
  format: 'esm',
  target: 'es2022',
  sourcemap: 'linked',
  external: ['../wasm-webgl/gputable.js'],
  plugins: [moduleBesideEntry],
  logLevel: 'warning'
});
