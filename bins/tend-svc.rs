//! tend-svc — not written yet.
#![forbid(unsafe_code)]

fn main() {
    eprintln!("tend-svc: fatal: not implemented");
    std::process::exit(111);
}
