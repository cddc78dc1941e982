//! Arrow IPC a piece at a time (a fetch body, a file read in parts): each message is decoded
//! as soon as it has arrived whole, so the reader holds the schema, the dictionaries and the
//! one message being received, never the whole input. Files stream too when their messages
//! after the magic start with the schema (arrow-rs writes it there; the footer after the end
//! marker is skipped); a file whose schema is only in its footer (apache-arrow JS writes
//! those) is held whole and decoded when it ends.

use arrow_ipc::MessageHeader;

use super::{invalid_ipc, read_ipc, FieldInfo, IpcColumn, ReadOptions, FILE_MAGIC};
use crate::column::{try_append, try_vec};
use crate::error::Result;

/// The end-of-stream marker: a continuation and a zero length.
const END: [u8; 8] = [0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0];

pub struct StreamReader {
    options: ReadOptions,
    /// Bytes received and not yet decoded: the start of the next message.
    pending: Vec<u8>,
    /// The schema and dictionary messages: every batch is decoded after them.
    prefix: Vec<u8>,
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
    fields: Option<Vec<FieldInfo>>,
}

impl StreamReader {
    pub fn new(options: ReadOptions) -> StreamReader {
        StreamReader {
            options,
            pending: Vec::new(),
            prefix: Vec::new(),
            started: false,
            file: false,
            file_bytes: None,
            whole_file: false,
            ended: false,
            fields: None,
        }
    }

    /// The columns read (known once the schema or a batch has arrived).
    pub fn fields(&self) -> Option<&[FieldInfo]> {
        self.fields.as_deref()
    }

    /// Takes the next bytes of the input; returns the record batches they complete.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<Vec<IpcColumn>>> {
        if let Some(file) = self.file_bytes.as_mut() {
            try_append(file, bytes)?;
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
                self.file_bytes = Some(self.pending.clone());
                self.pending.drain(..8);
                self.file = true;
            }
            self.started = true;
        }
        let mut batches = Vec::new();
        while let Some((length, metadata)) = self.next_message()? {
            let mut pending = std::mem::take(&mut self.pending);
            let message = &pending[..length];
            if self.decode(message, metadata)? {
                let mut stream = try_vec(self.prefix.len() + message.len() + END.len(), "a batch")?;
                stream.extend_from_slice(&self.prefix);
                stream.extend_from_slice(message);
                stream.extend_from_slice(&END);
                let table = read_ipc(&stream, &self.options)?;
                self.fields = Some(table.fields);
                batches.extend(table.batches);
            }
            if self.whole_file {
                // The rest is in `file_bytes`, read when the input ends.
                break;
            }
            pending.drain(..length);
            self.pending = pending;
        }
        Ok(batches)
    }

    /// The input ended: a message left half-received is `INVALID_IPC`. Returns the fields
    /// (from the schema, for an input without batches), and the batches of a file held whole.
    pub fn finish(&mut self) -> Result<(Vec<FieldInfo>, Vec<Vec<IpcColumn>>)> {
        if self.whole_file {
            let table = read_ipc(&self.file_bytes.take().unwrap_or_default(), &self.options)?;
            self.fields = Some(table.fields.clone());
            return Ok((table.fields, table.batches));
        }
        if !self.ended && !self.pending.is_empty() {
            return Err(invalid_ipc(format!(
                "the input ended inside a message ({} bytes of it arrived)",
                self.pending.len()
            )));
        }
        if self.prefix.is_empty() {
            return Err(invalid_ipc("the input ended before its schema"));
        }
        if self.fields.is_none() {
            let mut stream = self.prefix.clone();
            stream.extend_from_slice(&END);
            self.fields = Some(read_ipc(&stream, &self.options)?.fields);
        }
        Ok((self.fields.clone().unwrap_or_default(), Vec::new()))
    }

    /// The length of the whole message at the start of `pending` and where its metadata
    /// lies, once it has all arrived; at the end marker, marks the end and gives `None`.
    fn next_message(&mut self) -> Result<Option<(usize, std::ops::Range<usize>)>> {
        if self.ended {
            return Ok(None);
        }
        if self.file && self.prefix.is_empty() {
            // Padding between a file's magic and its schema message.
            let zeros = self.pending.iter().take_while(|&&b| b == 0).count();
            self.pending.drain(..zeros);
        }
        let word = |at: usize| -> Option<u32> {
            let b = self.pending.get(at..at + 4)?;
            Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        };
        let (at, length) = match word(0) {
            Some(length) => (4, length),
            None => return Ok(None),
        };
        let (at, length) = match (length, word(4)) {
            (0xffff_ffff, Some(next)) => (8, next),
            (0xffff_ffff, None) => return Ok(None),
            _ => (at, length),
        };
        if length == 0 {
            self.ended = true;
            self.pending.clear();
            return Ok(None);
        }
        let metadata =
            i32::try_from(length).map_err(|_| invalid_ipc("negative metadata length"))?;
        let end = at + metadata as usize;
        if self.pending.len() < end {
            return Ok(None);
        }
        let message = arrow_ipc::root_as_message(&self.pending[at..end])
            .map_err(|e| invalid_ipc(format!("corrupt message metadata: {e}")))?;
        let body = usize::try_from(message.bodyLength())
            .map_err(|_| invalid_ipc("negative body length"))?;
        let total = end
            .checked_add(body)
            .ok_or_else(|| invalid_ipc("a message body past any input"))?;
        Ok((self.pending.len() >= total).then_some((total, at..end)))
    }

    /// Keeps a schema or dictionary message for the batches after it; whether `message` is a
    /// record batch to decode.
    fn decode(&mut self, message: &[u8], metadata: std::ops::Range<usize>) -> Result<bool> {
        let header = arrow_ipc::root_as_message(&message[metadata])
            .map_err(|e| invalid_ipc(format!("corrupt message metadata: {e}")))?
            .header_type();
        match header {
            MessageHeader::Schema => {
                if !self.prefix.is_empty() {
                    return Err(invalid_ipc("a second schema in one stream"));
                }
                self.prefix.extend_from_slice(message);
                self.file_bytes = None;
                Ok(false)
            }
            _ if self.prefix.is_empty() && self.file => {
                // A file with its schema only in the footer: read whole when it ends.
                self.whole_file = true;
                Ok(false)
            }
            MessageHeader::DictionaryBatch => {
                self.require_schema()?;
                self.prefix.extend_from_slice(message);
                Ok(false)
            }
            MessageHeader::RecordBatch => {
                self.require_schema()?;
                Ok(true)
            }
            _ => Err(invalid_ipc(
                "an IPC message that is not a schema, dictionary or batch",
            )),
        }
    }

    fn require_schema(&self) -> Result<()> {
        match self.prefix.is_empty() {
            true => Err(invalid_ipc("a batch before the schema")),
            false => Ok(()),
        }
    }
}
