//! tend-svok — not written yet.
#![forbid(unsafe_code)]

fn main() {
    eprintln!("tend-svok: fatal: not implemented");
    std::process::exit(111);
}
