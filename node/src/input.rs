//! Bounded input: every file and stream the programs read has a size limit,
//! so that a wrong path (`/dev/zero`, a tablebase given as a summary, a
//! pipe that never ends) is an error that says so, not memory growing until
//! the machine kills something.

use std::io::{BufRead, Read};
use std::path::Path;

/// Largest `summary.json` (or other JSON document) read whole: the summaries
/// of every shipped plan are under a megabyte; a peg or Sylver table's
/// summary with every row stays well under this.
pub const MAX_JSON_BYTES: u64 = 64 << 20;

/// Longest line of a line-oriented stream (`probe --batch`): a position's
/// text is a few hundred bytes.
pub const MAX_LINE_BYTES: usize = 64 << 10;

/// The text of the file at `path`, at most `limit` bytes; `what` names the
/// file in errors ("summary"). A file that is longer, not UTF-8, missing or
/// a directory is an error naming the path.
pub fn read_text_limited(path: &Path, limit: u64, what: &str) -> Result<String, String> {
    let shown = path.display();
    let file = std::fs::File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!("{shown}: no such file"),
        _ => format!("{shown}: {e}"),
    })?;
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(format!("{shown}: is a directory, not a {what} file"));
    }
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes).map_err(|e| format!("{shown}: {e}"))?;
    if bytes.len() as u64 > limit {
        return Err(format!("{shown}: more than {limit} bytes, too large for a {what}; is it the right file?"));
    }
    String::from_utf8(bytes)
        .map_err(|e| format!("{shown}: not UTF-8 text (byte {}): not a {what}", e.utf8_error().valid_up_to()))
}

/// One line of a bounded line stream.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A line of UTF-8 text, without its line ending.
    Text(String),
    /// A line that is not UTF-8 (what it was is shown lossily).
    NotUtf8(String),
    /// A line longer than the limit: its first bytes, lossily, the rest
    /// skipped up to the next line ending.
    TooLong(String),
}

/// Reads the lines of `input`, none held beyond `limit` bytes: a bad line
/// (not UTF-8, too long) is reported as such and the stream goes on with the
/// next one.
pub struct BoundedLines<R> {
    input: R,
    limit: usize,
    /// The last line was reported too long before its end: skip to it.
    skipping: bool,
}

impl<R: BufRead> BoundedLines<R> {
    /// Lines of `input`, each at most `limit` bytes.
    pub fn new(input: R, limit: usize) -> BoundedLines<R> {
        BoundedLines { input, limit, skipping: false }
    }
}

impl<R: BufRead> Iterator for BoundedLines<R> {
    type Item = std::io::Result<Line>;

    fn next(&mut self) -> Option<Self::Item> {
        while self.skipping {
            let available = match self.input.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Some(Err(e)),
            };
            if available.is_empty() {
                return None;
            }
            let (take, ends) = match available.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (available.len(), false),
            };
            self.input.consume(take);
            self.skipping = !ends;
        }
        let mut buf = Vec::new();
        let mut too_long = false;
        loop {
            let available = match self.input.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Some(Err(e)),
            };
            if available.is_empty() {
                if buf.is_empty() && !too_long {
                    return None;
                }
                break;
            }
            let (take, ends) = match available.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (available.len(), false),
            };
            let room = self.limit.saturating_sub(buf.len());
            if take > room {
                // Reported now, not at the line's end, which may never come
                // (`/dev/zero`); the rest of it is skipped by the next call.
                buf.extend_from_slice(&available[..room]);
                self.input.consume(room);
                too_long = true;
                self.skipping = true;
                break;
            }
            buf.extend_from_slice(&available[..take]);
            self.input.consume(take);
            if ends {
                break;
            }
        }
        while buf.last().is_some_and(|&b| b == b'\n' || b == b'\r') {
            buf.pop();
        }
        if too_long {
            let head: String = String::from_utf8_lossy(&buf[..buf.len().min(80)]).into_owned();
            return Some(Ok(Line::TooLong(head)));
        }
        Some(Ok(match String::from_utf8(buf) {
            Ok(s) => Line::Text(s),
            Err(e) => Line::NotUtf8(String::from_utf8_lossy(e.as_bytes()).into_owned()),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_bounded_and_bad_lines_do_not_stop_the_stream() {
        let mut input = b"a1\r\n".to_vec();
        input.extend_from_slice(&[0xff, 0xfe, b'\n']);
        input.extend_from_slice(&[b'x'; 100]);
        input.extend_from_slice(b"\nlast");
        let lines: Vec<Line> = BoundedLines::new(&input[..], 10).map(Result::unwrap).collect();
        assert_eq!(lines[0], Line::Text("a1".into()));
        assert!(matches!(lines[1], Line::NotUtf8(_)));
        assert_eq!(lines[2], Line::TooLong("x".repeat(10)));
        assert_eq!(lines[3], Line::Text("last".into()));
        assert_eq!(lines.len(), 4);
    }

    #[test]
    fn an_endless_line_is_read_in_bounded_memory() {
        // 64 MB of zeros with no line ending, read with a 1 KB limit.
        let zeros = std::io::repeat(0).take(64 << 20);
        let mut lines = BoundedLines::new(std::io::BufReader::new(zeros), 1024);
        assert!(matches!(lines.next(), Some(Ok(Line::TooLong(_)))));
        assert!(lines.next().is_none());
        // An endless one is reported before its end.
        let mut endless = BoundedLines::new(std::io::BufReader::new(std::io::repeat(0)), 1024);
        assert!(matches!(endless.next(), Some(Ok(Line::TooLong(_)))));
    }

    #[test]
    fn files_beyond_the_limit_are_refused() {
        let e = read_text_limited(Path::new("/dev/zero"), 1 << 20, "summary").unwrap_err();
        assert!(e.contains("too large for a summary"), "{e}");
        let e = read_text_limited(Path::new("/nonexistent/summary.json"), 10, "summary").unwrap_err();
        assert!(e.contains("no such file"), "{e}");
    }
}
