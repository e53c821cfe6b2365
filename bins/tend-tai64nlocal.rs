//! tend-tai64nlocal — not written yet.
#![forbid(unsafe_code)]

fn main() {
    eprintln!("tend-tai64nlocal: fatal: not implemented");
    std::process::exit(111);
}
