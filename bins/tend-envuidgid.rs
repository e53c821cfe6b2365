//! tend-envuidgid — not written yet.
#![forbid(unsafe_code)]

fn main() {
    eprintln!("tend-envuidgid: fatal: not implemented");
    std::process::exit(111);
}
