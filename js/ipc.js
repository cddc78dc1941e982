// Arrow IPC out through the wasm writer, for evaluators and tables alike.
import {wasm} from './bindings.js';
import {guard, guardAsync} from './errors.js';
import {withHandles} from './devices.js';
import {dictionarySource} from './dictionary-source.js';

// Arrow IPC bytes of columns `[name, kind, dataHandles, validityHandles, dictionary]`: at
// once when every column is in host memory, else a promise (GPU outputs are read back first).
export function writeIpc(columns) {
  const writer = new wasm.IpcWriter();
  try {
    for (const [name, kind, data, validity, dictionary] of columns) {
      withHandles(data, dataList => withHandles(validity, validityList => guard(() => writer.addColumn(name, kind, dataList, validityList, dictionarySource(dictionary)))));
    }
  } catch (error) {
    writer.free();
    throw error;
  }
  return finishIpc(writer);
}

// The bytes of a filled wasm `IpcWriter` (a promise where a column is on a GPU); frees it.
export function finishIpc(writer) {
  if (writer.inHostMemory) {
    try {
      return guard(() => writer.finishSync());
    } finally {
      writer.free();
    }
  }
  return guardAsync(() => writer.finish()).finally(() => writer.free());
}
