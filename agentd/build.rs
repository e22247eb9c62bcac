//! Rebuilds the daemon when a file is added to or changed in a folder it embeds at compile
//! time, which cargo would not otherwise notice: `migrations/` (`sqlx::migrate!`) and the
//! web page's `clients/web/public/` (`transport::web::page`).

fn main() {
    println!("cargo::rerun-if-changed=../migrations");
    println!("cargo::rerun-if-changed=../clients/web/public");
}
