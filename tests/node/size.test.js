// The default import's download (issue 12): the browser entry (one minified module), the
// modules it still imports and the default wasm module, gzipped, within its budget (scripts/sizes.js).
// The WebGL2 module stays out of it.
import {test} from 'node:test';
import assert from 'node:assert/strict';
import {DEFAULT_IMPORT_BUDGET, defaultImportSize, webglModuleSize} from '../../scripts/sizes.js';

test('the default import stays within its budget and leaves the WebGL2 module out', () => {
  const base = defaultImportSize();
  const files = base.rows.map(row => row.file);
  assert.ok(files.includes('web/index.js') && files.includes('wasm/gputable_bg.wasm'), files.join(', '));
  assert.ok(!files.some(file => file.startsWith('wasm-webgl/')), `the default import loads ${files.join(', ')}`);
  assert.ok(base.gzipped <= DEFAULT_IMPORT_BUDGET,
    `default import ${base.gzipped} bytes gzipped, budget ${DEFAULT_IMPORT_BUDGET}: ${JSON.stringify(base.rows)}`);
  // The split is real: the WebGL2 module carries what the default one leaves out.
  assert.ok(webglModuleSize().gzipped > 2 * base.gzipped, 'the WebGL2 module is over twice the default import');
});
