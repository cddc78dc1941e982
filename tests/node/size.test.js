// The default import's download (issue 12): the browser entry (one minified module), the
// modules it still imports and the default wasm module, gzipped. The 500 kB budget is not reached yet; until it is,
// the import is held to the size measured (DEFAULT_IMPORT_CEILING), so it cannot grow
// unnoticed. The WebGL2 module stays out of it.
import {test} from 'node:test';
import assert from 'node:assert/strict';
import {DEFAULT_IMPORT_CEILING, defaultImportSize, webglModuleSize} from '../../scripts/sizes.js';

test('the default import stays within its ceiling and leaves the WebGL2 module out', () => {
  const base = defaultImportSize();
  const files = base.rows.map(row => row.file);
  assert.ok(files.includes('web/index.js') && files.includes('wasm/gputable_bg.wasm'), files.join(', '));
  assert.ok(!files.some(file => file.startsWith('wasm-webgl/')), `the default import loads ${files.join(', ')}`);
  assert.ok(base.gzipped <= DEFAULT_IMPORT_CEILING,
    `default import ${base.gzipped} bytes gzipped, ceiling ${DEFAULT_IMPORT_CEILING}: ${JSON.stringify(base.rows)}`);
  // The split is real: the WebGL2 module carries what the default one leaves out.
  assert.ok(webglModuleSize().gzipped > 2 * base.gzipped, 'the WebGL2 module is over twice the default import');
});
