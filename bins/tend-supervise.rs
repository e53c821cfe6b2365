//! tend-supervise — not written yet.
#![forbid(unsafe_code)]

fn main() {
    eprintln!("tend-supervise: fatal: not implemented");
    std::process::exit(111);
}
