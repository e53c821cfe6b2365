//! tend-envdir — not written yet.
#![forbid(unsafe_code)]

fn main() {
    eprintln!("tend-envdir: fatal: not implemented");
    std::process::exit(111);
}
