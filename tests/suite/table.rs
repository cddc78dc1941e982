//! The table model (src/table/) on each device: ownership (a table owns its batches, a
//! selection borrows, detaching hands storage over), validity alignment with all-valid
//! flags made on the device, packing on the device, appendable vectors, and the errors of
//! misuse. Live storage is counted by `table::live_buffers_on`.

use super::*;
use gputable::engine;
use gputable::table::{self, Batch, BatchRef, Table, TableRef, Vector};
use gputable::DType;

/// A batch of columns `x` (int32) and, with `nulls`, `y` with validity flags `nulls`, else
/// `y` with none; its storage on `device`.
async fn batch<D: Backend>(device: &D, x: &[i32], nulls: Option<&[u8]>) -> BatchRef {
    let id = Some(device.core().id);
    let y: Vec<f32> = x.iter().map(|v| *v as f32 * 0.5).collect();
    let validity = nulls.map(|flags| Vector::owning("y.validity", u8s(flags, 1), id));
    let vectors = vec![
        Vector::owning("x", i32s(x, 1), id).shared(),
        Vector::owning("y", f32s(&y, 1), id)
            .with_validity(validity)
            .shared(),
    ];
    let batch = Batch::new(vectors, None).unwrap();
    for node in batch.nodes().unwrap() {
        engine::put_on(device, &node, true).await.unwrap();
    }
    batch.shared()
}

/// The node of column `name` (the table's borrow ends before anything awaits).
fn column_node(table: &TableRef, name: &str) -> NodeRef {
    table.borrow().column(name).unwrap().node().unwrap()
}

async fn read_column_f32(table: &TableRef, name: &str) -> Vec<f32> {
    read_f32(&column_node(table, name)).await
}

async fn validity_of(table: &TableRef, name: &str) -> Vec<u8> {
    let column = table.borrow().column(name).unwrap();
    let flags = column.validity.expect("the column has validity");
    let node = flags.borrow().node().unwrap();
    match read(&node).await {
        ColumnData::U8(v) => v,
        other => panic!("validity of {other:?}"),
    }
}

pub async fn tables_own_align_validity_and_pack_on_the_device<T: Target>() {
    let device = T::fresh().await;
    let id = device.core().id;
    let table = Table::new(Vec::new(), Some(id)).shared();
    let added = batch(&device, &[1, 2], None).await;
    table.borrow_mut().add_batch(added).unwrap();
    let added = batch(&device, &[3, 4, 5], Some(&[1, 0, 1])).await;
    table.borrow_mut().add_batch(added).unwrap();
    let added = batch(&device, &[6], None).await;
    table.borrow_mut().add_batch(added).unwrap();
    assert_eq!(
        table::live_buffers_on(id, false),
        9,
        "6 columns, one validity vector and two made when the batches were added"
    );
    assert!(
        table.borrow().fields[1].nullable,
        "a column with nulls in any batch is nullable"
    );
    assert!(!table.borrow().fields[0].nullable);

    // Every batch of `y` has validity now (all valid where a batch had none).
    assert_eq!(validity_of(&table, "y").await, vec![1, 1, 1, 0, 1, 1]);

    // A sum skips the null slot whatever batch holds it.
    let column = table.borrow().column("y").unwrap();
    let flags = column.validity.as_ref().unwrap().borrow().node().unwrap();
    let total = ir::reduce(
        ir::ReduceKind::Sum,
        &column.node().unwrap(),
        Some(&flags),
        4,
    )
    .unwrap();
    engine::evaluate(&device, std::slice::from_ref(&total))
        .await
        .unwrap();
    assert_eq!(read_f32(&total).await, vec![0.5 + 1.0 + 1.5 + 2.5 + 3.0]);

    // A selection borrows: destroying it frees nothing.
    let selection = table.borrow().select(&["y".to_string()]).unwrap().shared();
    assert_eq!(
        read_column_f32(&selection, "y").await,
        vec![0.5, 1.0, 1.5, 2.0, 2.5, 3.0]
    );
    selection.borrow_mut().destroy();
    assert_eq!(table::live_buffers_on(id, false), 9);
    assert_eq!(
        read_column_f32(&table, "y").await,
        vec![0.5, 1.0, 1.5, 2.0, 2.5, 3.0]
    );

    // Packing joins on the device (nothing read back) and frees the superseded storage.
    let before = device.core().counters.stats();
    table::pack_batches(&device, &table, 4.0).await.unwrap();
    let after = device.core().counters.stats();
    assert_eq!(
        after.readback_bytes, before.readback_bytes,
        "nothing read back"
    );
    let rows: Vec<u64> = table
        .borrow()
        .batches
        .iter()
        .map(|b| b.borrow().num_rows())
        .collect();
    assert_eq!(
        rows,
        vec![5, 1],
        "batches of at least 4 rows, the last one shorter"
    );
    assert_eq!(
        table::live_buffers_on(id, false),
        6,
        "the packed batch's two columns and flags, and the last batch kept"
    );
    assert_eq!(validity_of(&table, "y").await, vec![1, 1, 1, 0, 1, 1]);
    assert_eq!(
        read_i32(&column_node(&table, "x")).await,
        vec![1, 2, 3, 4, 5, 6]
    );

    // Detaching hands the storage over: the vector outlives the table.
    let detached = table.borrow_mut().detach_vector("x").unwrap();
    assert_eq!(table.borrow().fields.len(), 1);
    let [first] = &table.borrow_mut().detach_batches(0.0, 1.0).unwrap()[..] else {
        panic!("one batch detached")
    };
    table.borrow_mut().destroy();
    assert_eq!(code(table.borrow().num_rows()), ErrorCode::Destroyed);
    assert_eq!(
        read_i32(&detached.node().unwrap()).await,
        vec![1, 2, 3, 4, 5, 6]
    );
    assert_eq!(
        first.borrow().num_rows(),
        5,
        "a detached batch outlives the table"
    );
    let mut detached = detached;
    detached.destroy();
    first.borrow_mut().destroy();
    assert_eq!(code(detached.node()), ErrorCode::Destroyed);
    assert_eq!(table::live_buffers_on(id, false), 0, "every buffer freed");
}

pub async fn all_valid_flags_are_made_on_the_device<T: Target>() {
    let device = T::fresh().await;
    let id = device.core().id;
    let rows = 1 << 20;
    let table = Table::new(Vec::new(), Some(id)).shared();
    let many: Vec<i32> = (0..rows).collect();
    let added = batch(&device, &[1, 2], Some(&[0, 1])).await;
    table.borrow_mut().add_batch(added).unwrap();
    let added = batch(&device, &many, None).await;
    table.borrow_mut().add_batch(added).unwrap();
    // Reading the made flags runs on the device and uploads no flag per row.
    let before = device.core().counters.stats();
    let column = table.borrow().column("y").unwrap();
    let flags = column.validity.as_ref().unwrap().borrow().node().unwrap();
    let valid = ir::reduce(ir::ReduceKind::Sum, &flags, None, 4).unwrap();
    engine::evaluate(&device, std::slice::from_ref(&valid))
        .await
        .unwrap();
    let uploaded = device.core().counters.stats().upload_bytes - before.upload_bytes;
    assert!(
        uploaded < rows as u64,
        "uploaded {uploaded} bytes for {rows} flags"
    );
    assert_eq!(read_u32(&valid).await, vec![rows as u32 + 1]);
    let made = table.borrow().batches[1].borrow().vectors[1]
        .borrow()
        .validity
        .clone();
    let made = made.unwrap().borrow().node().unwrap();
    assert!(
        !made.has_output(),
        "the flags were read fused, never stored"
    );
    engine::evaluate(&device, std::slice::from_ref(&made))
        .await
        .unwrap();
    assert_eq!(
        made.home().unwrap().device,
        id,
        "made on the table's device"
    );
    table.borrow_mut().destroy();
}

pub async fn table_misuse_is_a_typed_error<T: Target>() {
    let device = T::fresh().await;
    let id = Some(device.core().id);
    let table = Table::new(Vec::new(), id).shared();
    let added = batch(&device, &[1, 2], None).await;
    table.borrow_mut().add_batch(added).unwrap();
    let twice = table.borrow().batches[0].clone();
    assert_eq!(
        code(table.borrow_mut().add_batch(twice)),
        ErrorCode::InvalidArgument
    );
    let other = Batch::new(
        vec![Vector::owning("x", f32s(&[1.0], 1), id).shared()],
        None,
    )
    .unwrap();
    assert_eq!(
        code(table.borrow_mut().add_batch(other.shared())),
        ErrorCode::TypeMismatch
    );
    let uneven = vec![
        Vector::owning("a", i32s(&[1, 2], 1), id).shared(),
        Vector::owning("b", i32s(&[1], 1), id).shared(),
    ];
    assert_eq!(code(Batch::new(uneven, None)), ErrorCode::InvalidArgument);
    let added = batch(&device, &[3], None).await;
    table.borrow_mut().add_batch(added).unwrap();
    let two_chunks = table.borrow().column("x").unwrap();
    assert_eq!(
        code(Batch::new(vec![two_chunks.shared()], None)),
        ErrorCode::InvalidArgument
    );
    // A batch belongs to one table at a time; detached, it can move.
    let elsewhere = Table::new(Vec::new(), id).shared();
    let held = table.borrow().batches[0].clone();
    assert_eq!(
        code(elsewhere.borrow_mut().add_batch(held.clone())),
        ErrorCode::InvalidArgument
    );
    let moved = table.borrow_mut().detach_batches(0.0, 1.0).unwrap();
    elsewhere.borrow_mut().add_batch(moved[0].clone()).unwrap();
    let added = batch(&device, &[1, 2], None).await;
    table.borrow_mut().add_batch(added).unwrap();
    // A schema that does not describe its vectors is refused.
    let field = gputable::table::Field {
        name: "x".into(),
        dtype: DType::U8,
        size: 1,
        nullable: false,
        metadata: Default::default(),
        dictionary: None,
    };
    let mislabelled = Vector::owning("x", f32s(&[1.0, 2.0], 2), id).shared();
    assert_eq!(
        code(Batch::new(vec![mislabelled], Some(vec![field]))),
        ErrorCode::TypeMismatch
    );
    // A selection frees what it was given (its own borrows free nothing).
    let before = table::live_buffers_on(device.core().id, false);
    let selection = elsewhere
        .borrow()
        .select(&["x".to_string(), "y".to_string()])
        .unwrap()
        .shared();
    let added = batch(&device, &[7], None).await;
    selection.borrow_mut().add_batch(added).unwrap();
    selection.borrow_mut().destroy();
    assert_eq!(table::live_buffers_on(device.core().id, false), before);
    assert_eq!(read_i32(&column_node(&elsewhere, "x")).await, vec![1, 2]);
    elsewhere.borrow_mut().destroy();
    assert_eq!(
        code(table.borrow().column("nope")),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(table::pack_batches(&device, &table, f64::NAN).await),
        ErrorCode::InvalidArgument
    );
    let empty = Table::new(Vec::new(), id).shared();
    table::pack_batches(&device, &empty, f64::INFINITY)
        .await
        .unwrap();
    assert_eq!(code(empty.borrow().last_batch()), ErrorCode::EmptyInput);
    table.borrow_mut().destroy();
    assert_eq!(code(table.borrow().column("x")), ErrorCode::Destroyed);
}

pub async fn appendable_vectors_grow_and_reset<T: Target>() {
    let mut vector = Vector::appendable("p", DType::F32, 2, 2).unwrap();
    let buffer = vector.data[0].borrow().buffer.clone();
    vector
        .append(ColumnData::F32(vec![1.0, 2.0, 3.0, 4.0]))
        .unwrap();
    let first = vector.node().unwrap();
    vector.append(ColumnData::F32(vec![5.0, 6.0])).unwrap();
    assert_eq!(buffer.borrow().capacity(), 4, "capacity doubled");
    assert_eq!(buffer.borrow().generation, 1);
    // Ops built on the old rows keep them (the vector forgets its node, it is not destroyed).
    assert!(!first.is_destroyed());
    evaluate::<T>(std::slice::from_ref(&first)).await.unwrap();
    assert_eq!(read_f32(&first).await, vec![1.0, 2.0, 3.0, 4.0]);
    let doubled = ir::binary(Multiply, &vector.node().unwrap(), &lit(&[2.0])).unwrap();
    evaluate::<T>(std::slice::from_ref(&doubled)).await.unwrap();
    assert_eq!(
        read_f32(&doubled).await,
        vec![2.0, 4.0, 6.0, 8.0, 10.0, 12.0]
    );
    assert_eq!(
        code(vector.append(ColumnData::F32(vec![1.0]))),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(vector.append(ColumnData::I32(vec![1, 2]))),
        ErrorCode::TypeMismatch
    );
    vector.reset_last().unwrap();
    assert_eq!(vector.length(), 0);
    assert_eq!(buffer.borrow().capacity(), 4, "reset keeps the capacity");
    // Rows nothing else held were destroyed when they changed; those an op holds go with
    // the vector.
    let held = vector.node().unwrap();
    vector.append(ColumnData::F32(vec![1.0, 2.0])).unwrap();
    let unheld = std::rc::Rc::downgrade(&vector.node().unwrap());
    vector.append(ColumnData::F32(vec![3.0, 4.0])).unwrap();
    assert!(unheld.upgrade().is_none());
    assert!(!held.is_destroyed());
    vector.destroy();
    assert!(first.is_destroyed() && held.is_destroyed());
    assert_eq!(
        code(vector.append(ColumnData::F32(vec![1.0, 2.0]))),
        ErrorCode::Destroyed
    );
}

/// The table verbs' result (api.md "Tables"): a table of columns computed on the device, one
/// batch per chunk, each owning its storage there, nulls kept; a filter's batches hold the
/// kept rows of each input batch, copied out of the packed result; the input table can go.
pub async fn verbs_resolve_to_a_table_of_batches_on_the_device<T: Target>() {
    let device = T::fresh().await;
    let id = device.core().id;
    let input = Table::new(Vec::new(), Some(id)).shared();
    for (x, nulls) in [
        (&[5, -2, 7][..], None),
        (&[-1, -3][..], Some(&[1u8, 0][..])),
        (&[4, 9, -8, 6][..], Some(&[0, 1, 1, 1][..])),
    ] {
        let added = batch(&device, x, nulls).await;
        input.borrow_mut().add_batch(added).unwrap();
    }
    let fields = input.borrow().fields.clone();
    let x = column_node(&input, "x");
    let y = {
        let column = input.borrow().column("y").unwrap();
        let flags = column.validity.as_ref().unwrap().borrow().node().unwrap();
        ir::with_validity(&column.node().unwrap(), Some(&flags)).unwrap()
    };
    let zero = ir::source(ColumnData::I32(vec![0]), 1, true).unwrap();
    let keep = ir::predicate(ir::Predicate::Greater, &[x.clone(), zero]).unwrap();
    let columns = vec![
        ("x".to_string(), ir::filter(&x, &keep).unwrap(), None),
        ("y".to_string(), ir::filter(&y, &keep).unwrap(), None),
    ];
    let result = table::table_of_columns(&device, &columns, &fields, Some(id), None, false)
        .await
        .unwrap()
        .shared();
    // With `on_host` (a part of a join too large for the budget), the kept rows stay there.
    let on_host = table::table_of_columns(&device, &columns, &fields, Some(id), None, true)
        .await
        .unwrap()
        .shared();
    for batch in &on_host.borrow().batches {
        for node in batch.borrow().nodes().unwrap() {
            let home = node.home().expect("stored");
            assert_eq!(home.device, gputable::value::HOST, "{node:?}");
        }
    }
    assert_eq!(
        read_i32(&column_node(&on_host, "x")).await,
        vec![5, 7, 4, 9, 6]
    );
    assert_eq!(validity_of(&on_host, "y").await, vec![1, 1, 0, 1, 1]);
    on_host.borrow_mut().destroy();
    drop(columns);
    // A column of other rows than the others is refused.
    let short = ir::source(ColumnData::F32(vec![1.0, 2.0]), 1, false).unwrap();
    let other = vec![
        ("x".to_string(), x.clone(), None),
        ("z".to_string(), short, None),
    ];
    let err = table::table_of_columns(&device, &other, &fields, Some(id), None, false).await;
    assert_eq!(err.err().map(|e| e.code), Some(ErrorCode::InvalidArgument));
    // A constant, or a column of one row (a reduction's result), is each of the others'
    // rows (api.md: constants broadcast; Arquero's derive of an aggregate).
    let one_row = ir::source(ColumnData::F32(vec![2.5]), 1, false).unwrap();
    let constant = ir::source(ColumnData::I32(vec![-7]), 1, true).unwrap();
    let broadcast = vec![
        ("x".to_string(), x.clone(), None),
        ("one".to_string(), one_row, None),
        ("seven".to_string(), constant, None),
    ];
    let repeated = table::table_of_columns(&device, &broadcast, &fields, Some(id), Some(9), false)
        .await
        .unwrap()
        .shared();
    let batch_rows: Vec<u64> = (repeated.borrow().batches.iter())
        .map(|b| b.borrow().num_rows())
        .collect();
    assert_eq!(batch_rows, vec![3, 2, 4]);
    assert_eq!(read_column_f32(&repeated, "one").await, vec![2.5; 9]);
    assert_eq!(
        read_i32(&column_node(&repeated, "seven")).await,
        vec![-7; 9]
    );
    repeated.borrow_mut().destroy();
    // A derive of a one-row table refuses a longer column (it repeated the table's row).
    let one_row = ir::source(ColumnData::F32(vec![2.5]), 1, false).unwrap();
    let longer = vec![
        ("one".to_string(), one_row, None),
        ("x".to_string(), x.clone(), None),
    ];
    let err = table::table_of_columns(&device, &longer, &fields, Some(id), Some(1), false).await;
    assert_eq!(err.err().map(|e| e.code), Some(ErrorCode::InvalidArgument));
    input.borrow_mut().destroy();
    let rows: Vec<u64> = (result.borrow().batches.iter())
        .map(|b| b.borrow().num_rows())
        .collect();
    assert_eq!(rows, vec![2, 0, 3], "each batch keeps its kept rows");
    assert_eq!(
        read_i32(&column_node(&result, "x")).await,
        vec![5, 7, 4, 9, 6]
    );
    let y = read_column_f32(&result, "y").await;
    assert_eq!((y[0], y[1], y[3], y[4]), (2.5, 3.5, 4.5, 3.0));
    assert_eq!(validity_of(&result, "y").await, vec![1, 1, 0, 1, 1]);
    for batch in &result.borrow().batches {
        for node in batch.borrow().nodes().unwrap() {
            let home = node.home().expect("stored");
            assert!(
                home.device == id || !T::TRANSFERS,
                "{node:?} is on device {}",
                home.device
            );
        }
    }
    result.borrow_mut().destroy();
}
