//! Arrow IPC a piece at a time (a fetch body, a file read in parts): each message is decoded
//! as soon as it has arrived whole, so the reader holds the schema, the dictionaries and the
//! one message being received, never the whole input. Files stream too when their messages
//! after the magic start with the schema (arrow-rs writes it there; the footer after the end
//! marker is skipped); a file whose schema is only in its footer (apache-arrow JS writes
//! those) is held whole and decoded when it ends, batches or none. A streamed file's footer
//! must agree with the messages read (`framing::StreamSection`), as a whole read checks.

use arrow_ipc::MessageHeader;

use super::framing::{self, Framed, Located, StreamSection};
use super::read::Decoder;
use super::{invalid_ipc, read_ipc, FieldInfo, IpcColumn, IpcTable, ReadOptions, FILE_MAGIC};
use crate::column::try_append;
use crate::error::Result;

pub struct StreamReader {
    options: ReadOptions,
    /// Bytes received and not yet decoded, from `at` on: the start of the next message.
    pending: Vec<u8>,
    at: usize,
    /// Where `pending` starts in the input.
    base: usize,
    /// Where each dictionary and record batch message of a file started, for its footer.
    dictionaries: Vec<i64>,
    batches: Vec<i64>,
    /// What follows a file's end marker: its footer.
    tail: Vec<u8>,
    /// How long `pending` must grow before its next message can be whole: a large body
    /// arriving in many pieces is not framed again at each.
    awaiting: usize,
    /// Whether the input's start (file magic or not) was seen.
    started: bool,
    /// Whether the input is a file: writers pad its first message to an alignment.
    file: bool,
    /// A file's bytes from its start, kept until its schema message arrives, and whole when
    /// it has none before its batches (`whole_file`).
    file_bytes: Option<Vec<u8>>,
    whole_file: bool,
    /// Whether the end marker was seen: what follows (a file's footer) is ignored.
    ended: bool,
    /// The schema message's metadata (each batch's fields are read through it) and what
    /// reading keeps between messages.
    schema: Option<(Vec<u8>, Decoder)>,
}

impl StreamReader {
    pub fn new(options: ReadOptions) -> StreamReader {
        StreamReader {
            options,
            pending: Vec::new(),
            at: 0,
            base: 0,
            dictionaries: Vec::new(),
            batches: Vec::new(),
            tail: Vec::new(),
            awaiting: 0,
            started: false,
            file: false,
            file_bytes: None,
            whole_file: false,
            ended: false,
            schema: None,
        }
    }

    /// The columns read (known once the schema has arrived).
    pub fn fields(&self) -> Option<Vec<FieldInfo>> {
        self.schema.as_ref().map(|(_, decoder)| decoder.fields())
    }

    /// The schema's custom metadata (known once the schema has arrived).
    pub fn metadata(&self) -> Option<&super::KeyValues> {
        self.schema.as_ref().map(|(_, decoder)| &decoder.metadata)
    }

    /// Takes the next bytes of the input; returns the record batches they complete.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<Vec<IpcColumn>>> {
        if let Some(file) = self.file_bytes.as_mut() {
            try_append(file, bytes)?;
        }
        if self.ended && self.file {
            try_append(&mut self.tail, bytes)?;
        }
        if self.ended || self.whole_file {
            return Ok(Vec::new());
        }
        try_append(&mut self.pending, bytes)?;
        if !self.started {
            // The file magic, padded to 8 bytes, may still be arriving.
            let magic_so_far =
                FILE_MAGIC.starts_with(&self.pending) || self.pending.starts_with(FILE_MAGIC);
            if self.pending.len() < 8 && magic_so_far {
                return Ok(Vec::new());
            }
            if self.pending.starts_with(FILE_MAGIC) {
                self.file_bytes = Some(try_copy(&self.pending)?);
                self.at = 8;
                self.file = true;
            }
            self.started = true;
        }
        if self.pending.len() < self.awaiting {
            return Ok(Vec::new());
        }
        let batches = self.decode_arrived();
        // Once per push, not per message: each byte received moves at most once.
        let decoded = self.at.min(self.pending.len());
        self.pending.drain(..decoded);
        self.base += decoded;
        self.awaiting = self.awaiting.saturating_sub(decoded);
        self.at = 0;
        batches
    }

    /// Decodes the whole messages from `at` on, moving `at` past them.
    fn decode_arrived(&mut self) -> Result<Vec<Vec<IpcColumn>>> {
        let mut batches = Vec::new();
        while !self.ended && !self.whole_file {
            if self.file && self.schema.is_none() {
                // Padding between a file's magic and its schema message. No message starts
                // with a zero byte: the continuation marker is 0xFFFFFFFF, and a legacy
                // metadata length is 4 past a multiple of 8 (its message stays aligned).
                // The legacy end marker (four zero bytes) is skipped too: a legacy file
                // with no message before its footer does not stream.
                let rest = self.pending.get(self.at..).unwrap_or_default();
                self.at += rest.iter().take_while(|&&b| b == 0).count();
            }
            match framing::locate(&self.pending, self.at)? {
                Located::Short(missing) => {
                    self.awaiting = missing.until();
                    break;
                }
                Located::End(next) => {
                    self.ended = true;
                    if self.file {
                        try_append(&mut self.tail, self.pending.get(next..).unwrap_or_default())?;
                    }
                    self.at = self.pending.len();
                }
                Located::Message(framed, next) => {
                    let (header, start) = (framed.message.header_type(), self.base + self.at);
                    let batch = decode(
                        framed,
                        &mut self.schema,
                        &mut self.file_bytes,
                        self.file,
                        &self.options,
                    )?;
                    if self.file && header != MessageHeader::Schema {
                        match header {
                            MessageHeader::DictionaryBatch => &mut self.dictionaries,
                            _ => &mut self.batches,
                        }
                        .push(start as i64);
                    }
                    match batch {
                        Decoded::Batch(columns) => batches.push(columns),
                        Decoded::Kept => {}
                        // The rest is in `file_bytes`, read when the input ends.
                        Decoded::WholeFile => self.whole_file = true,
                    }
                    self.at = next;
                }
            }
        }
        Ok(batches)
    }

    /// The input ended: a message left half-received is `INVALID_IPC`. Returns the fields
    /// (from the schema, for an input without batches), and the batches of a file held whole.
    pub fn finish(&mut self) -> Result<IpcTable> {
        // A file with no schema message before its end has it only in its footer: read
        // whole, as a file with batches before any schema is.
        if self.whole_file || (self.file && self.schema.is_none()) {
            return read_ipc(&self.file_bytes.take().unwrap_or_default(), &self.options);
        }
        if !self.ended && self.pending.len() > self.at {
            return Err(invalid_ipc(format!(
                "the input ended inside a message ({} bytes of it arrived)",
                self.pending.len() - self.at
            )));
        }
        let Some((metadata, decoder)) = &self.schema else {
            return Err(invalid_ipc("the input ended before its schema"));
        };
        if self.file {
            if !self.ended {
                return Err(invalid_ipc(
                    "the file ended before its end marker and footer",
                ));
            }
            let (footer, _) = framing::footer_at_end(&self.tail, 0)?;
            let schema = arrow_ipc::root_as_message(metadata)
                .ok()
                .and_then(|message| message.header_as_schema())
                .ok_or_else(|| invalid_ipc("a schema message without its schema"))?;
            let section = StreamSection {
                schema,
                dictionaries: std::mem::take(&mut self.dictionaries),
                batches: std::mem::take(&mut self.batches),
            };
            section.check(&footer)?;
        }
        Ok(IpcTable {
            fields: decoder.fields(),
            batches: Vec::new(),
            metadata: decoder.metadata.clone(),
        })
    }
}

enum Decoded {
    Batch(Vec<IpcColumn>),
    /// A schema or dictionary, kept for the batches after it.
    Kept,
    /// A file's batch before any schema: the file is read whole when it ends.
    WholeFile,
}

fn decode(
    framed: Framed,
    schema: &mut Option<(Vec<u8>, Decoder)>,
    file_bytes: &mut Option<Vec<u8>>,
    file: bool,
    options: &ReadOptions,
) -> Result<Decoded> {
    match (framed.message.header_type(), schema.as_mut()) {
        (MessageHeader::Schema, None) => {
            let header = framed
                .message
                .header_as_schema()
                .ok_or_else(|| invalid_ipc("a schema message without its schema"))?;
            let decoder = Decoder::new(header, options.clone())?;
            *schema = Some((try_copy(framed.metadata)?, decoder));
            *file_bytes = None;
            Ok(Decoded::Kept)
        }
        (MessageHeader::Schema, Some(_)) => Err(invalid_ipc("a second schema in one stream")),
        (_, None) if file => Ok(Decoded::WholeFile),
        (_, None) => Err(invalid_ipc("a batch before the schema")),
        (_, Some((metadata, decoder))) => {
            let header = arrow_ipc::root_as_message(metadata)
                .ok()
                .and_then(|message| message.header_as_schema())
                .ok_or_else(|| invalid_ipc("a schema message without its schema"))?;
            Ok(match decoder.message(header, framed)? {
                Some(columns) => Decoded::Batch(columns),
                None => Decoded::Kept,
            })
        }
    }
}

fn try_copy(bytes: &[u8]) -> Result<Vec<u8>> {
    let mut copy = Vec::new();
    try_append(&mut copy, bytes)?;
    Ok(copy)
}
