//! tend-setuidgid — not written yet.
#![forbid(unsafe_code)]

fn main() {
    eprintln!("tend-setuidgid: fatal: not implemented");
    std::process::exit(111);
}
