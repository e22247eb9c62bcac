//! Writing to stdout: `out!` and `outln!` replace `print!` and `println!`.
//!
//! `println!` panics when stdout is closed (`agentctl watch | head -3`); these end the
//! process quietly instead, with status 141 as a SIGPIPE would. Every write is flushed, so
//! streamed text appears as it comes. How things look is decided in `format`, not here.

use std::io::Write;

/// Writes to stdout and flushes; a closed stdout ends the process.
pub(crate) fn write(args: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(141);
        }
        eprintln!("error: cannot write to stdout: {e}");
        std::process::exit(1);
    }
}

/// `print!` that flushes and does not panic on a closed stdout.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::write(format_args!($($arg)*))
    };
}

/// `println!` that does not panic on a closed stdout.
macro_rules! outln {
    () => {
        $crate::output::write(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::output::write(format_args!("{}\n", format_args!($($arg)*)))
    };
}
