//! Shell completions and manual pages, generated from the command definitions in `main.rs`
//! (clap_complete, clap_mangen), so they always match the commands. Nothing here talks to
//! the daemon. The Debian package installs what these print (packaging/deb/build.sh).

use std::io::Write;
use std::path::Path;

use clap::CommandFactory;
use clap_complete::Shell;

use crate::Cli;
use crate::exit::Exit;

/// Prints the completion script for `shell`.
pub(crate) fn completions(shell: Shell) -> Exit {
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "agentctl", &mut buf);
    print(&buf)
}

/// Prints the manual page of agentctl, or with `dir` writes one page per command into it
/// (`agentctl.1`, `agentctl-send.1`, `agentctl-agents-list.1`, ...).
pub(crate) fn man(dir: Option<&Path>) -> Exit {
    let result = match dir {
        Some(dir) => clap_mangen::generate_to(Cli::command(), dir)
            .map_err(|e| format!("cannot write the manual pages into {}: {e}", dir.display())),
        None => {
            let mut buf = Vec::new();
            // As the pages `--dir` writes: no `help` subcommand, which has no page.
            let command = Cli::command().disable_help_subcommand(true);
            match clap_mangen::Man::new(command).render(&mut buf) {
                Ok(()) => return print(&buf),
                Err(e) => Err(format!("cannot render the manual page: {e}")),
            }
        }
    };
    match result {
        Ok(()) => Exit::Ok,
        Err(e) => {
            eprintln!("error: {e}");
            Exit::Error
        }
    }
}

/// Writes generated text to stdout; a closed pipe (`| head`) is not an error worth a panic.
fn print(text: &[u8]) -> Exit {
    let mut out = std::io::stdout().lock();
    match out.write_all(text).and_then(|()| out.flush()) {
        Ok(()) => Exit::Ok,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Exit::Ok,
        Err(e) => {
            eprintln!("error: cannot write to stdout: {e}");
            Exit::Error
        }
    }
}
