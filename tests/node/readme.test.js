// Runs every ```js block of README.md against the built package. A line
// `await <expr>.readValue(); // [1, 2]` (or `console.log(await <expr>.readValue()); // Type [..]`)
// becomes an assertion that the values (and the typed array's name, if given) match.
import {test} from 'node:test';
import assert from 'node:assert/strict';
import {mkdirSync, readFileSync, rmSync, writeFileSync} from 'node:fs';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
const blocks = [...readme.matchAll(/```js\n([\s\S]*?)```/g)].map(m => m[1]);
const dir = new URL('./.readme/', import.meta.url);

const CHECKED = /^(\s*)(?:console\.log\()?(await .*\.readValue\([^;]*?\))\)?;\s*\/\/ (?:(\w+Array) )?\[([^\]]*)\]/;

function instrument(code) {
  let checks = 0;
  const lines = code.split('\n').map(line => {
    const m = line.match(CHECKED);
    if (!m) return line;
    checks++;
    return `${m[1]}globalThis.__check(${m[2]}, [${m[4]}], ${JSON.stringify(m[3] ?? null)}, ${JSON.stringify(line.trim())});`;
  });
  return {code: lines.join('\n'), checks};
}

globalThis.__check = (actual, expected, typeName, line) => {
  if (typeName) assert.equal(actual.constructor.name, typeName, line);
  assert.equal(actual.length, expected.length, `${line}: got [${[...actual]}]`);
  expected.forEach((e, i) => {
    const ok = Object.is(actual[i], e) || Math.abs(actual[i] - e) <= 1e-6 * Math.abs(e);
    assert.ok(ok, `${line}: element ${i} is ${actual[i]}, the README says ${e}`);
  });
};

test('README examples run and print what they say', async () => {
  rmSync(dir, {recursive: true, force: true});
  mkdirSync(dir, {recursive: true});
  let checks = 0;
  try {
    for (const [i, block] of blocks.entries()) {
      const {code, checks: n} = instrument(block);
      checks += n;
      const file = new URL(`block${i}.mjs`, dir);
      writeFileSync(file, code);
      await import(file.href);
    }
  } finally {
    rmSync(dir, {recursive: true, force: true});
  }
  assert.ok(blocks.length >= 6, `only ${blocks.length} examples found`);
  assert.ok(checks >= 15, `only ${checks} checked outputs`);
});
