// Arrow IPC out through the wasm writer, for evaluators and tables alike.
import * as wasm from './wasm/gputable.js';
import {guard, guardAsync} from './errors.js';
import {withHandles} from './devices.js';

/**
 * Arrow IPC bytes of columns `[name, kind, dataHandles, validityHandles]`: at once when
 * every column is in host memory, else a promise (GPU outputs are read back first).
 */
export function writeIpc(columns) {
  const writer = new wasm.IpcWriter();
  try {
    for (const [name, kind, data, validity] of columns) {
      withHandles(data, dataList => withHandles(validity, validityList => guard(() => writer.addColumn(name, kind, dataList, validityList))));
    }
  } catch (error) {
    writer.free();
    throw error;
  }
  const host = columns.every(([, , data, validity]) => [...data, ...validity].every(h => h.inHostMemory));
  if (host) {
    try {
      return guard(() => writer.finishSync());
    } finally {
      writer.free();
    }
  }
  return guardAsync(() => writer.finish()).finally(() => writer.free());
}
