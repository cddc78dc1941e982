import {fileURLToPath} from 'node:url';

export default {
  context: fileURLToPath(new URL('.', import.meta.url)),
  mode: 'production',
  entry: './main.js',
  output: {path: fileURLToPath(new URL('./dist', import.meta.url)), filename: 'main.js', clean: true},
  // The wasm module is some megabytes: webpack's size warnings are expected.
  performance: {hints: false}
};
