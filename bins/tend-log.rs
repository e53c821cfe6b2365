//! tend-log — not written yet.
#![forbid(unsafe_code)]

fn main() {
    eprintln!("tend-log: fatal: not implemented");
    std::process::exit(111);
}
