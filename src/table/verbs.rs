//! The table a table verb resolves to (api.md "Tables"): its columns computed on one device,
//! one record batch per chunk, each batch owning its storage (a chunk stored on its own is
//! shared, not copied; the rows a device count kept are copied out of the packed result).

use std::rc::Rc;

use super::{chunk_nodes, Batch, Field, Table, Vector};
use crate::engine::Backend;
use crate::error::{GpuTableError, Result};
use crate::ipc::Dictionary;
use crate::ir::{self, NodeRef};
use crate::value::{DeviceId, HOST};

/// A column of a table verb's result: its name, its node and the values of its codes.
pub type VerbColumn = (String, NodeRef, Option<Rc<Dictionary>>);

/// A table of `columns` (chunked alike) evaluated on `device`, one batch per chunk. A column
/// named as one of `like` keeps its field's metadata where its type and row size are the
/// same (and its dictionary where it has the same values). The table is on `table_device`.
/// `rows`, where given, is the rows every column has (a derive's: its table's), a constant
/// or a column of one row repeated to them. `on_host`: counted columns' rows stay on the
/// host whatever their size (one part of a result too large for the budget).
pub async fn table_of_columns(
    device: &dyn Backend,
    columns: &[VerbColumn],
    like: &[Field],
    table_device: Option<DeviceId>,
    rows: Option<u64>,
    on_host: bool,
) -> Result<Table> {
    let nodes = broadcast(columns, rows)?;
    crate::engine::evaluate(device, &nodes).await?;
    // A counted column as the rows its count gave each chunk.
    let mut views = Vec::with_capacity(nodes.len());
    for node in &nodes {
        // A boxed future: its state machine stays out of this one's (a smaller module).
        let on_host: std::pin::Pin<Box<dyn std::future::Future<Output = _>>> =
            Box::pin(rows_on_host(device, node, on_host));
        views.push(match on_host.await? {
            Some(rows) => rows,
            None => ir::known_rows(node, "a table column")?,
        });
    }
    let with_flags = ir::with_null_flags(&views);
    crate::engine::evaluate(device, &with_flags).await?;
    let id = device.core().id;
    let mut parts = Vec::with_capacity(views.len());
    for view in &views {
        let flags = match view.validity() {
            Some(v) => Some(chunk_nodes(v, id)?),
            None => None,
        };
        parts.push((chunk_nodes(view, id)?, flags));
    }
    let batches = parts.first().map_or(0, |(data, _)| data.len());
    for ((name, _, _), (data, _)) in columns.iter().zip(&parts) {
        let rows = |d: &[NodeRef]| d.iter().map(|n| n.meta.length).collect::<Vec<_>>();
        if data.len() != batches || rows(data) != rows(&parts[0].0) {
            return Err(GpuTableError::invalid(format!(
                "column '{name}' has chunks of {:?} rows, the table's batches {:?}",
                rows(data),
                rows(&parts[0].0)
            )));
        }
    }
    let fields: Vec<Field> = (columns.iter().zip(&views))
        .map(|((name, _, dictionary), view)| field_of(name, view, like, dictionary))
        .collect();
    let mut table = Table::new(fields.clone(), table_device);
    for k in 0..batches {
        let vectors = (fields.iter().zip(&parts))
            .map(|(field, (data, flags))| {
                let validity = flags.as_ref().map(|f| {
                    Vector::owning(
                        &format!("{}.validity", field.name),
                        f[k].clone(),
                        table_device,
                    )
                });
                Vector::owning(&field.name, data[k].clone(), table_device)
                    .with_validity(validity)
                    .shared()
            })
            .collect();
        let batch = Batch::new(vectors, Some(fields.clone()))?;
        table.add_batch(batch.shared())?;
    }
    Ok(table)
}

/// A counted column evaluated in parts (under `allowedMem`), whose rows stay on the host, as
/// the rows its count gave each chunk, there, where more than half the budget (a view of
/// them would copy them to the device whole, as an output that large is not), or `always`.
/// `None` for other columns.
async fn rows_on_host(
    device: &dyn Backend,
    node: &NodeRef,
    always: bool,
) -> Result<Option<NodeRef>> {
    let (Some(_), Some(chunks), Some(output)) = (node.counted(), node.settled(), node.home())
    else {
        return Ok(None);
    };
    let rows: u32 = chunks.iter().sum();
    let budget = device.core().allowed_mem.get().unwrap_or(u64::MAX);
    let bytes = device.value_bytes(node.meta.dtype, node.meta.size, rows);
    let large = output.device == HOST && bytes > budget / 2;
    if chunks.is_empty() || !(always || large) {
        return Ok(None);
    }
    let kept = |output| async move { crate::engine::read_rows(&output, 0, rows).await };
    let values = ir::source_chunked(kept(output).await?, node.meta.size, chunks.clone())?;
    let Some(valid) = node.validity() else {
        return Ok(Some(values));
    };
    let flags = valid
        .home()
        .ok_or_else(|| crate::engine::internal("null flags not computed"))?;
    let flags = ir::source_chunked(kept(flags).await?, valid.meta.size, chunks)?;
    ir::with_validity(&values, Some(&flags)).map(Some)
}

/// The columns' nodes, a constant or a column of one row repeated for each of the others'
/// rows (api.md: constants broadcast across rows; Arquero's `derive` of an aggregate).
fn broadcast(columns: &[VerbColumn], rows: Option<u64>) -> Result<Vec<NodeRef>> {
    let single = |n: &NodeRef| n.meta.constant || (n.meta.length == 1 && n.chunks.len() == 1);
    let sized = |n: &&NodeRef| !single(n) && n.counted().is_none();
    for (name, node, _) in columns {
        match rows {
            Some(rows) if sized(&node) && u64::from(node.meta.length) != rows => {
                return Err(GpuTableError::invalid(format!(
                    "column '{name}' has {} rows, the table {rows}",
                    node.meta.length
                )))
            }
            _ => {}
        }
    }
    let like = (columns.iter().map(|(_, n, _)| n)).find(sized);
    (columns.iter())
        .map(|(_, node, _)| match like {
            Some(like) if single(node) && (node.meta.constant || node.chunks != like.chunks) => {
                ir::broadcast_like(node, like)
            }
            _ => Ok(node.clone()),
        })
        .collect()
}

fn field_of(
    name: &str,
    node: &NodeRef,
    like: &[Field],
    dictionary: &Option<Rc<Dictionary>>,
) -> Field {
    let (dtype, size) = (node.meta.dtype, node.meta.size);
    let nullable = node.validity().is_some();
    let mut field = match like.iter().find(|f| f.name == name) {
        Some(field) if field.dtype == dtype && field.size == size => Field {
            nullable,
            ..field.clone()
        },
        _ => Field {
            name: name.to_string(),
            dtype,
            size,
            nullable,
            metadata: Default::default(),
            dictionary: None,
        },
    };
    // The source's own dictionary where the values are the same (it knows their Arrow type).
    field.dictionary = match (dictionary, field.dictionary.take()) {
        (Some(given), Some(own)) if own.same_values(given) => Some(own),
        (given, _) => given.clone(),
    };
    if field.dictionary.is_some() {
        (field.metadata).insert("kind".to_string(), "dictionary".to_string());
    }
    field
}
