//! tend-check's HTTP probe client (its head parsed by httparse) on the edges hand parsing
//! gets wrong: obs-fold continuation lines, header names in any case, an answer split
//! across many reads, HTTP/1.0 with no length, a status line with no reason phrase,
//! garbage instead of a status line. The servers hold the connection open after their
//! answer unless said otherwise, so a body framing misread is a timeout, not a pass.

use crate::common::*;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::Output;
use std::time::Duration;

/// A server on a thread: for each connection, read the request, write `pieces` one by
/// one (a pause between them, so each is its own read on the client's side), then hold
/// the connection open (`hold`) or close it.
fn pieces_server(pieces: &'static [&'static [u8]], hold: bool) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in l.incoming() {
            let Ok(mut c) = c else { return };
            let _ = c.set_nodelay(true);
            let mut buf = [0u8; 1024];
            let _ = c.read(&mut buf);
            for p in pieces {
                let _ = c.write_all(p);
                let _ = c.flush();
                std::thread::sleep(Duration::from_millis(30));
            }
            if hold {
                held.push(c);
            }
        }
    });
    port
}

fn probe(port: u16, extra: &[&str]) -> Output {
    let url = format!("http://127.0.0.1:{port}/");
    let mut args = vec!["-t", "3000", "-u", url.as_str()];
    args.extend_from_slice(extra);
    tend("tend-check", args)
}

fn passes(port: u16, extra: &[&str]) {
    let o = probe(port, extra);
    assert_code(&o, 0);
}

fn fails_with(port: u16, extra: &[&str], why: &str) {
    let o = probe(port, extra);
    assert_code(&o, 1);
    assert_eq!(
        text(&o.stderr),
        format!("tend-check: fatal: probe failed: {why}\n")
    );
}

#[test]
fn check_http_obs_fold_continues_the_field_before_it() {
    // A folded Transfer-Encoding whose last coding, on the continuation line, is chunked:
    // the body is "o" then "k" decoded; read raw it would lack "ok".
    let port = pieces_server(
        &[b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip,\r\n chunked\r\n\r\n1\r\no\r\n1\r\nk\r\n0\r\n\r\n"],
        true,
    );
    passes(port, &["-b", "ok"]);
    // A folded field before Content-Length: the length still frames the body (held open:
    // read until close would time out), and the fold is not taken as a field of its own.
    let port = pieces_server(
        &[b"HTTP/1.1 200 OK\r\nX-Long: a\r\n\tb\r\nContent-Length: 2\r\n\r\nok"],
        true,
    );
    passes(port, &["-b", "ok"]);
}

#[test]
fn check_http_header_names_in_any_case() {
    let port = pieces_server(&[b"HTTP/1.1 200 OK\r\ncontent-LENGTH: 2\r\n\r\nok"], true);
    passes(port, &["-b", "ok"]);
    let port = pieces_server(
        &[b"HTTP/1.1 200 OK\r\nTRANSFER-encoding: Chunked\r\n\r\n1\r\no\r\n1\r\nk\r\n0\r\n\r\n"],
        true,
    );
    passes(port, &["-b", "ok"]);
}

#[test]
fn check_http_answer_split_across_reads() {
    // Split inside the version, the code, a header name, the CRLF CRLF and the body.
    let port = pieces_server(
        &[
            b"HTT",
            b"P/1.1 2",
            b"00 OK\r\nContent-Len",
            b"gth: 8\r\n\r",
            b"\nhel",
            b"lo ok",
        ],
        true,
    );
    passes(port, &["-b", "lo ok"]);
    // The same with a 503 split inside its code: judged on the whole code.
    let port = pieces_server(
        &[b"HTTP/1.1 5", b"03 Busy\r\n", b"Content-Length: 0\r\n\r\n"],
        true,
    );
    fails_with(port, &[], "status 503 not in 200-299");
}

#[test]
fn check_http_1_0_without_a_length_reads_until_close() {
    // The text comes last, after a pause: only reading to the close finds it.
    let port = pieces_server(
        &[b"HTTP/1.0 200 OK\r\nServer: old\r\n\r\nhello ", b"world"],
        false,
    );
    passes(port, &["-b", "world"]);
    // Held open, the same answer never ends: a timeout, not a pass on what came.
    let port = pieces_server(&[b"HTTP/1.0 200 OK\r\n\r\nhello"], true);
    let o = tend(
        "tend-check",
        ["-t", "300", "-u", &format!("http://127.0.0.1:{port}/")],
    );
    assert_code(&o, 1);
    assert_eq!(
        text(&o.stderr),
        "tend-check: fatal: probe failed: no complete answer within 300 ms\n"
    );
}

#[test]
fn check_http_status_line_without_a_reason_phrase() {
    let port = pieces_server(&[b"HTTP/1.1 200\r\nContent-Length: 2\r\n\r\nok"], true);
    passes(port, &["-b", "ok"]);
    let port = pieces_server(&[b"HTTP/1.1 404\r\nContent-Length: 0\r\n\r\n"], true);
    fails_with(port, &[], "status 404 not in 200-299");
}

#[test]
fn check_http_garbage_instead_of_a_status_line() {
    for (answer, shown) in [
        (&b"\x16\x03\x01\x02\x00garbage\r\n\r\n"[..], "?????garbage"),
        (b"HTTP/1.1 abc OK\r\n\r\n", "HTTP/1.1 abc OK"),
        (b"HTTP/2 200\r\n\r\n", "HTTP/2 200"),
        (b"ICY 200 OK\r\n\r\n", "ICY 200 OK"),
        (b"HTTP/1.1 200OK\r\n\r\n", "HTTP/1.1 200OK"),
    ] {
        let answer: &'static [u8] = Box::leak(answer.to_vec().into_boxed_slice());
        let pieces: &'static [&'static [u8]] = Box::leak(vec![answer].into_boxed_slice());
        let port = pieces_server(pieces, true);
        fails_with(port, &[], &format!("malformed status line {shown:?}"));
    }
}
