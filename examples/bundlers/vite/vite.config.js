import {defineConfig} from 'vite';

export default defineConfig({
  // Assets found relative to the page, wherever it is served from.
  base: './',
  // Top-level await in main.js.
  build: {target: 'es2022'}
});
