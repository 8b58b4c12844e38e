//! JSON bodies for the errors hyper answers itself.
//!
//! A request hyper cannot parse never reaches a route: hyper answers it with
//! an empty body and closes the connection (414 for a request target over
//! 65,534 bytes; 431 for a head over about 400 KiB or with more than 100
//! headers; 400 for a malformed request line or header). The server
//! (`retro_node::net::serve_http`) wraps every accepted connection in [`JsonErrors`], which recognises such an
//! answer as hyper writes it (a status of 400 or more with `content-length:
//! 0`, which no route of the explorer sends) and writes the same status with a
//! JSON body `{"error": "..."}` instead, like every other error of the API.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A connection that passes everything through except an empty error
/// response, which it replaces with one carrying a JSON body.
pub struct JsonErrors<T> {
    inner: T,
    /// The replacement being written, how much of it is out, and how many of
    /// hyper's bytes it stands for.
    pending: Option<(Vec<u8>, usize, usize)>,
}

impl<T> JsonErrors<T> {
    /// Wraps `inner`.
    pub fn new(inner: T) -> JsonErrors<T> {
        JsonErrors { inner, pending: None }
    }
}

/// The message for an error status hyper sends on its own.
fn message(code: u16) -> String {
    match code {
        400 => "malformed HTTP request (request line or headers)".into(),
        414 => "request target too long (over 65,534 bytes; the explorer's queries take at most 4096)".into(),
        431 => "request headers too large (over about 400 KiB, or more than 100 headers)".into(),
        code => format!("HTTP error {code} before the request reached the explorer"),
    }
}

/// When `buf` starts with a whole response head of status 400 or more and
/// `content-length: 0`: the response to write instead, and the head's length.
pub fn replacement(buf: &[u8]) -> Option<(Vec<u8>, usize)> {
    if !buf.starts_with(b"HTTP/1.") {
        return None;
    }
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = std::str::from_utf8(&buf[..end]).ok()?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next()?;
    let code: u16 = status_line.split(' ').nth(1)?.parse().ok()?;
    if code < 400 || !lines.any(|l| l.eq_ignore_ascii_case("content-length: 0")) {
        return None;
    }
    let body = serde_json::json!({ "error": message(code) }).to_string();
    let out = format!(
        "{status_line}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    Some((out.into_bytes(), end))
}

impl<T: AsyncRead + Unpin> AsyncRead for JsonErrors<T> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for JsonErrors<T> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.pending.is_none() {
            match replacement(buf) {
                Some((out, claimed)) => this.pending = Some((out, 0, claimed)),
                None => return Pin::new(&mut this.inner).poll_write(cx, buf),
            }
        }
        // hyper offers the same bytes again after a Pending, so the
        // replacement is finished before any of them is reported written.
        let Some((out, written, claimed)) = this.pending.as_mut() else { unreachable!() };
        while *written < out.len() {
            match Pin::new(&mut this.inner).poll_write(cx, &out[*written..]) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => *written += n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        let claimed = *claimed;
        this.pending = None;
        Poll::Ready(Ok(claimed))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    // Not vectored: hyper then writes each response head as one buffer,
    // which `replacement` sees whole.
    fn is_write_vectored(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_empty_error_heads_are_replaced() {
        let hyper_431 = b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        let (out, claimed) = replacement(hyper_431).unwrap();
        assert_eq!(claimed, hyper_431.len());
        let text = String::from_utf8(out).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"), "{head}");
        assert!(head.contains(&format!("content-length: {}", body.len())));
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert!(v["error"].as_str().unwrap().contains("headers too large"));
        let (out, _) = replacement(b"HTTP/1.1 414 URI Too Long\r\ncontent-length: 0\r\n\r\n").unwrap();
        assert!(String::from_utf8(out).unwrap().contains("request target too long"));
        // A response of the API (a body), a success, half a head, a body chunk: untouched.
        for other in [
            &b"HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: 12\r\n\r\n{\"error\":1}"[..],
            b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 414 URI Too Long\r\ncontent-length: 0\r\n",
            b"{\"error\": \"HTTP/1.1 400\"}",
        ] {
            assert!(replacement(other).is_none(), "{}", String::from_utf8_lossy(other));
        }
    }
}
