//! tend-setsid — not written yet.
#![forbid(unsafe_code)]

fn main() {
    eprintln!("tend-setsid: fatal: not implemented");
    std::process::exit(111);
}
