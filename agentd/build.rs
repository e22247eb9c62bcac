//! Rebuilds the daemon when a file is added to or changed in `migrations/`: `sqlx::migrate!`
//! reads that folder at compile time, and cargo would not otherwise notice a new file.

fn main() {
    println!("cargo::rerun-if-changed=../migrations");
}
