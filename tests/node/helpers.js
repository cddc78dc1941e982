// Assertions the Node tests share: a call fails with a GpuTableError of `code`.
import assert from 'node:assert/strict';

export function throwsCode(fn, code) {
  assert.throws(fn, error => error.name === 'GpuTableError' && error.code === code, `expected ${code}`);
}

export async function rejectsCode(promise, code) {
  await assert.rejects(promise, error => error.name === 'GpuTableError' && error.code === code, `expected ${code}`);
}
