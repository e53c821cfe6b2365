//! Messages: the one line format every program prints (`PROG: KIND: what failed: why`),
//! and the one sink type through which a library hands its warnings to the program.

use std::fmt::Display;
use std::io::Write;

/// Where a library's warnings go; the program decides (its stderr line, a test's list).
/// Libraries take `&dyn Warn`; `tend_cli::Program` and any `Fn(&dyn Display)` are one.
pub trait Warn {
    fn warn(&self, msg: &dyn Display);

    /// A message of another kind than `warning` (tend-init's `info`, or a `fatal` it
    /// carries on past). A program prints it as `PROG: KIND: msg`; a sink that only
    /// takes warnings (a test's list) gets `KIND: msg`.
    fn say(&self, kind: &str, msg: &dyn Display) {
        if kind == "warning" {
            self.warn(msg)
        } else {
            self.warn(&format_args!("{kind}: {msg}"))
        }
    }
}

/// A sink that prints each message as `prefix: KIND: msg` on stderr ([`line`]), for a
/// program named at run time (`tend-supervise DIR`); a constant name is a `tend_cli::Program`.
pub struct Prefixed(pub String);

impl Warn for Prefixed {
    fn warn(&self, msg: &dyn Display) {
        line(&self.0, "warning", msg)
    }

    fn say(&self, kind: &str, msg: &dyn Display) {
        line(&self.0, kind, msg)
    }
}

impl<F: Fn(&dyn Display)> Warn for F {
    fn warn(&self, msg: &dyn Display) {
        self(msg)
    }
}

/// A sink that keeps the warnings as text, for a test to read.
#[derive(Debug, Default)]
pub struct Collected(std::cell::RefCell<Vec<String>>);

impl Collected {
    /// The warnings so far, in order (the sink starts empty again).
    pub fn take(&self) -> Vec<String> {
        self.0.take()
    }
}

impl Warn for Collected {
    fn warn(&self, msg: &dyn Display) {
        self.0.borrow_mut().push(msg.to_string());
    }
}

/// Print `prefix: kind: msg` as one line on stderr, with a single write(2) so lines from
/// concurrent processes never interleave. A newline or carriage return inside the
/// message (from a path or an argument) is shown as `\n` / `\r`: one message, one line.
pub fn line(prefix: &str, kind: &str, msg: &dyn Display) {
    let _ = std::io::stderr().write_all(format_line(prefix, kind, msg).as_bytes());
}

/// The line [`line`] writes, for a caller that must write it later itself (a forked
/// child, which may not allocate).
pub fn format_line(prefix: &str, kind: &str, msg: &dyn Display) -> String {
    let mut text = format!("{prefix}: {kind}: {msg}");
    if text.contains(['\n', '\r']) {
        text = text.replace('\n', "\\n").replace('\r', "\\r");
    }
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line() {
        assert_eq!(
            format_line("tend-svc", "fatal", &"unable to control a\nb: x"),
            "tend-svc: fatal: unable to control a\\nb: x\n"
        );
        let seen = std::cell::RefCell::new(Vec::new());
        let sink = |m: &dyn Display| seen.borrow_mut().push(m.to_string());
        sink.warn(&format_args!("n={}", 1));
        assert_eq!(seen.into_inner(), ["n=1"]);
        let kept = Collected::default();
        kept.warn(&format_args!("n={}", 2));
        kept.say("info", &"up");
        kept.say("warning", &"w");
        assert_eq!(kept.take(), ["n=2", "info: up", "w"]);
        assert!(kept.take().is_empty());
    }
}
