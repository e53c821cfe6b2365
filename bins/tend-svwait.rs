//! tend-svwait — not written yet.
#![forbid(unsafe_code)]

fn main() {
    eprintln!("tend-svwait: fatal: not implemented");
    std::process::exit(111);
}
