// The declaration file names exactly what the package exports.
import {test} from 'node:test';
import assert from 'node:assert/strict';
import {readFileSync} from 'node:fs';
import * as gt from 'gputable';

test('index.d.ts declares every runtime export', () => {
  const dts = readFileSync(new URL('../../js/index.d.ts', import.meta.url), 'utf8');
  const declared = new Set([...dts.matchAll(/export (?:declare )?(?:function|class|const) (\w+)/g)].map(m => m[1]));
  assert.deepEqual([...Object.keys(gt)].filter(name => !declared.has(name)), []);
  assert.deepEqual([...declared].filter(name => !(name in gt)), []);
});
