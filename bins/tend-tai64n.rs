//! tend-tai64n — not written yet.
#![forbid(unsafe_code)]

fn main() {
    eprintln!("tend-tai64n: fatal: not implemented");
    std::process::exit(111);
}
