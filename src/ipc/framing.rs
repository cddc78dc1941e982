//! The messages of an IPC stream or file, each checked before anything is read from it: its
//! metadata verified by flatbuffers, its metadata and body inside the input, its buffers
//! inside its body, its value counts capped for 32-bit arithmetic.

use arrow_ipc::{Block, Field, Footer, Message, MessageHeader, Schema};

use super::schema::describe;
use super::{invalid_ipc, FILE_MAGIC};
use crate::error::{GpuTableError, Result};

const CONTINUATION: u32 = 0xFFFF_FFFF;

/// A message's metadata (parsed, and its bytes) and its body.
pub struct Framed<'a> {
    pub message: Message<'a>,
    pub metadata: &'a [u8],
    pub body: &'a [u8],
}

fn read_u32(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// `start + len`, where that is at most `limit`.
fn end_within(start: usize, len: usize, limit: usize) -> Option<usize> {
    start.checked_add(len).filter(|&end| end <= limit)
}

/// What starts at a message boundary of input that may still be arriving.
pub enum Located<'a> {
    /// A whole message, and where the next one begins.
    Message(Framed<'a>, usize),
    /// The end-of-stream marker, and where what follows it begins.
    End(usize),
    /// Part of a message: the rest has not arrived (or, in a whole input, is missing).
    Short(Missing),
}

/// What of a message lies past the input's end, and the input length that would hold it.
pub enum Missing {
    Prefix,
    Metadata { length: usize, until: usize },
    Body { length: usize, until: usize },
}

impl Missing {
    /// The input length below which the message cannot be whole (0 when not yet known).
    pub fn until(&self) -> usize {
        match *self {
            Missing::Prefix => 0,
            Missing::Metadata { until, .. } | Missing::Body { until, .. } => until,
        }
    }

    /// The error for a whole input that ends here.
    pub fn error(self) -> GpuTableError {
        invalid_ipc(match self {
            Missing::Prefix => "truncated message".to_string(),
            Missing::Metadata { length, .. } => {
                format!("a message declares {length} bytes of metadata beyond the input")
            }
            Missing::Body { length, .. } => {
                format!("a message declares a body of {length} bytes beyond the input")
            }
        })
    }
}

/// The message whose length prefix starts at `at`, checked as the module doc says.
pub fn locate(bytes: &[u8], mut at: usize) -> Result<Located<'_>> {
    let Some(mut length) = read_u32(bytes, at) else {
        return Ok(Located::Short(Missing::Prefix));
    };
    at += 4;
    if length == CONTINUATION {
        let Some(next) = read_u32(bytes, at) else {
            return Ok(Located::Short(Missing::Prefix));
        };
        length = next;
        at += 4;
    }
    if length == 0 {
        return Ok(Located::End(at));
    }
    let length =
        i32::try_from(length).map_err(|_| invalid_ipc("negative metadata length"))? as usize;
    let Some(end) = end_within(at, length, bytes.len()) else {
        let until = at.saturating_add(length);
        return Ok(Located::Short(Missing::Metadata { length, until }));
    };
    let metadata = &bytes[at..end];
    let message = arrow_ipc::root_as_message(metadata)
        .map_err(|e| invalid_ipc(format!("corrupt message metadata: {e}")))?;
    let body =
        usize::try_from(message.bodyLength()).map_err(|_| invalid_ipc("negative body length"))?;
    // Checked before the body arrives, so a stream fails at the metadata that declares it.
    check_batch(&message, body)?;
    let Some(body_end) = end_within(end, body, bytes.len()) else {
        let until = end.saturating_add(body);
        return Ok(Located::Short(Missing::Body {
            length: body,
            until,
        }));
    };
    let body = &bytes[end..body_end];
    let framed = Framed {
        message,
        metadata,
        body,
    };
    Ok(Located::Message(framed, body_end))
}

/// A record or dictionary batch's value counts and buffers, against its body's length.
fn check_batch(message: &Message, body: usize) -> Result<()> {
    let batch = message
        .header_as_record_batch()
        .or_else(|| message.header_as_dictionary_batch().and_then(|d| d.data()));
    let Some(batch) = batch else {
        return Ok(());
    };
    // Lengths times list sizes (at most 4) or value widths (at most 8) must fit a 32-bit
    // usize: 8 x (2^31 - 1) / 4 just does. What the reader allocates is bounded by the
    // buffers it reads, not by these lengths (a column of nulls has no buffer at all; a
    // dictionary keeps flags only for its batches with nulls).
    let limit = i32::MAX as u64 / 4;
    let nodes = batch.nodes();
    let lengths = std::iter::once(batch.length()).chain(nodes.iter().flatten().map(|n| n.length()));
    for length in lengths {
        if !(0..=limit as i64).contains(&length) {
            return Err(invalid_ipc(format!(
                "a batch declares {length} values, past what a column may hold"
            )));
        }
    }
    for buffer in batch.buffers().iter().flatten() {
        let (offset, len) = (buffer.offset(), buffer.length());
        let inside = offset >= 0
            && len >= 0
            && (offset as u64)
                .checked_add(len as u64)
                .is_some_and(|e| e <= body as u64);
        if !inside {
            return Err(invalid_ipc(format!(
                "a buffer at {offset} of {len} bytes lies outside its {body}-byte body"
            )));
        }
    }
    Ok(())
}

/// The message at `at` of a whole input, or `None` at the end-of-stream marker.
fn message_at(bytes: &[u8], at: usize) -> Result<Option<(Framed<'_>, usize)>> {
    match locate(bytes, at)? {
        Located::Message(framed, next) => Ok(Some((framed, next))),
        Located::End(_) => Ok(None),
        Located::Short(missing) => Err(missing.error()),
    }
}

/// A stream's schema and the messages after it, to its end marker or the input's end.
pub fn stream(bytes: &[u8]) -> Result<(Schema<'_>, Vec<Framed<'_>>)> {
    let mut at = 0;
    let mut schema = None;
    let mut messages = Vec::new();
    while at < bytes.len() {
        let Some((framed, next)) = message_at(bytes, at)? else {
            break;
        };
        match (framed.message.header_as_schema(), &schema) {
            (Some(header), None) => schema = Some(header),
            (Some(_), Some(_)) => return Err(invalid_ipc("a second schema in one stream")),
            (None, None) => return Err(invalid_ipc("a batch before the schema")),
            (None, Some(_)) => messages.push(framed),
        }
        at = next;
    }
    let schema = schema.ok_or_else(|| invalid_ipc("the input ended before its schema"))?;
    Ok((schema, messages))
}

/// A file's schema and its dictionary and record batch messages, as its footer lists them.
pub fn file(bytes: &[u8]) -> Result<(Schema<'_>, Vec<Framed<'_>>)> {
    // Magic (padded to 8), stream, footer, footer length (4), magic (6).
    let (footer, footer_start) = footer_at_end(bytes, 8)?;
    let schema = footer
        .schema()
        .ok_or_else(|| invalid_ipc("a file footer without a schema"))?;
    if let Some(stream) = stream_section(&bytes[..footer_start])? {
        stream.check(&footer)?;
    }
    let blocks = (footer.dictionaries().into_iter().flatten())
        .chain(footer.recordBatches().into_iter().flatten());
    let mut messages = Vec::new();
    for block in blocks {
        messages.push(block_message(bytes, block, footer_start)?);
    }
    Ok((schema, messages))
}

/// The footer of a file (or of its bytes from `least` on: `least` bytes come before the
/// footer at least), and where it starts.
pub fn footer_at_end(bytes: &[u8], least: usize) -> Result<(Footer<'_>, usize)> {
    let n = bytes.len();
    if n < least + 10 || !bytes.ends_with(FILE_MAGIC) {
        return Err(invalid_ipc("an Arrow file must end with the ARROW1 magic"));
    }
    let footer_len = read_u32(bytes, n - 10).ok_or_else(|| invalid_ipc("truncated file"))?;
    let footer_start = (n - 10)
        .checked_sub(footer_len as usize)
        .filter(|&s| s >= least)
        .ok_or_else(|| invalid_ipc("the footer length exceeds the file"))?;
    let footer = arrow_ipc::root_as_footer(&bytes[footer_start..n - 10])
        .map_err(|e| invalid_ipc(format!("corrupt footer: {e}")))?;
    Ok((footer, footer_start))
}

/// What a file's messages (after its magic) hold where they start with a schema: what its
/// footer must agree with, so that a file read whole and one read in pieces (which decodes
/// the messages as they arrive) give the same table.
pub struct StreamSection<'a> {
    pub schema: Schema<'a>,
    /// Where each dictionary batch and record batch message starts in the file, in order.
    pub dictionaries: Vec<i64>,
    pub batches: Vec<i64>,
}

impl StreamSection<'_> {
    /// `INVALID_IPC` unless `footer` holds the same schema and lists these batches, in order.
    pub fn check(&self, footer: &Footer) -> Result<()> {
        let footer_schema = footer
            .schema()
            .ok_or_else(|| invalid_ipc("a file footer without a schema"))?;
        if !same_fields(self.schema, footer_schema) {
            return Err(invalid_ipc(
                "the file's footer and its messages hold different schemas",
            ));
        }
        let offsets = |blocks: Option<flatbuffers::Vector<'_, Block>>| -> Vec<i64> {
            blocks.iter().flatten().map(|b| b.offset()).collect()
        };
        if offsets(footer.dictionaries()) != self.dictionaries
            || offsets(footer.recordBatches()) != self.batches
        {
            return Err(invalid_ipc(
                "the file's footer lists other batches than its messages hold",
            ));
        }
        Ok(())
    }
}

/// A file's messages from its magic to its end marker (`bytes` ends where its footer
/// starts), where the first is a schema; `None` where its schema is only in its footer.
fn stream_section(bytes: &[u8]) -> Result<Option<StreamSection<'_>>> {
    // Padding after the magic (see `StreamReader` on why no message starts with a zero).
    let mut at = 8 + bytes
        .get(8..)
        .unwrap_or_default()
        .iter()
        .take_while(|&&b| b == 0)
        .count();
    let Some((first, next)) = message_at(bytes, at)? else {
        return Ok(None);
    };
    let Some(schema) = first.message.header_as_schema() else {
        return Ok(None);
    };
    let mut section = StreamSection {
        schema,
        dictionaries: Vec::new(),
        batches: Vec::new(),
    };
    at = next;
    while let Some((framed, next)) = message_at(bytes, at)? {
        section.record(framed.message.header_type(), at)?;
        at = next;
    }
    Ok(Some(section))
}

impl StreamSection<'_> {
    /// Records the message of type `header` that starts at `at` in the file.
    pub fn record(&mut self, header: MessageHeader, at: usize) -> Result<()> {
        let at = at as i64;
        match header {
            MessageHeader::DictionaryBatch => self.dictionaries.push(at),
            MessageHeader::RecordBatch => self.batches.push(at),
            MessageHeader::Schema => return Err(invalid_ipc("a second schema in one stream")),
            _ => {
                return Err(invalid_ipc(
                    "an IPC message that is not a schema, dictionary or batch",
                ))
            }
        }
        Ok(())
    }
}

/// Whether two schemas hold the same fields: names, types, nullability, dictionaries and
/// children, in order.
fn same_fields(a: Schema, b: Schema) -> bool {
    let (a, b) = (a.fields(), b.fields());
    let count = |f: Option<flatbuffers::Vector<'_, flatbuffers::ForwardsUOffset<Field<'_>>>>| {
        f.map_or(0, |f| f.len())
    };
    count(a) == count(b)
        && a.iter()
            .flatten()
            .zip(b.iter().flatten())
            .all(|(x, y)| same_field(x, y))
}

fn same_field(a: Field, b: Field) -> bool {
    let children = |f: &Field| f.children().map_or(0, |c| c.len());
    a.name() == b.name()
        && a.nullable() == b.nullable()
        && describe(&a) == describe(&b)
        && a.dictionary().map(|d| d.id()) == b.dictionary().map(|d| d.id())
        && children(&a) == children(&b)
        && (a.children().iter().flatten())
            .zip(b.children().iter().flatten())
            .all(|(x, y)| same_field(x, y))
}

fn block_message<'a>(bytes: &'a [u8], block: &Block, footer_start: usize) -> Result<Framed<'a>> {
    let offset =
        usize::try_from(block.offset()).map_err(|_| invalid_ipc("negative block offset"))?;
    let meta = usize::try_from(block.metaDataLength())
        .map_err(|_| invalid_ipc("negative block metadata length"))?;
    let body = usize::try_from(block.bodyLength())
        .map_err(|_| invalid_ipc("negative block body length"))?;
    let end = (offset.checked_add(meta))
        .and_then(|metadata_end| end_within(metadata_end, body, footer_start))
        .ok_or_else(|| invalid_ipc("a block lies beyond the file"))?;
    // Read from the block's bytes only, so the message cannot reach past it.
    match message_at(&bytes[..end], offset)? {
        Some((framed, _)) => Ok(framed),
        None => Err(invalid_ipc("a block holds the end-of-stream marker")),
    }
}
