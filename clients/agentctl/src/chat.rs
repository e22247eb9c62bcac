//! `agentctl chat`: a conversation at the terminal. Reads a line, sends it, streams the
//! answer as `send` does (the same run following, the same prompts and questions, asked on
//! stdin), and reads the next line, until the end of input or `/quit`.
//!
//! stdin is the conversation, terminal or not, so a script can drive it: a permission
//! prompt or a question takes the next line as its answer.

use agent_proto::client::Client;

use crate::exit::Exit;
use crate::send::{self, Answering, Interrupts};

/// What a line typed at the chat prompt means.
#[derive(Debug, PartialEq)]
enum Line<'a> {
    Quit,
    Empty,
    Message(&'a str),
}

fn parse(line: &str) -> Line<'_> {
    let text = line.trim_end_matches(['\n', '\r']);
    match text.trim() {
        "/quit" | "/exit" => Line::Quit,
        "" => Line::Empty,
        _ => Line::Message(text),
    }
}

pub(crate) async fn run(client: &Client, agent: String, yes: bool, json: bool) -> Exit {
    let mut interrupts = match Interrupts::install() {
        Ok(i) => i,
        Err(e) => {
            eprintln!("error: cannot handle Ctrl-C: {e}");
            return Exit::Error;
        }
    };
    eprintln!("chatting with agent {agent}; /quit or Ctrl-D to end, Ctrl-C cancels a run");
    loop {
        let line = tokio::select! {
            line = send::prompt_line("> ") => line,
            // Ctrl-C at the prompt (no run to cancel) ends the chat.
            () = interrupts.recv() => {
                eprintln!();
                return Exit::Ok;
            }
        };
        let Some(line) = line else {
            eprintln!();
            return Exit::Ok;
        };
        let text = match parse(&line) {
            Line::Quit => return Exit::Ok,
            Line::Empty => continue,
            Line::Message(text) => text.to_owned(),
        };
        let exit = send::follow(
            client,
            &agent,
            send::Sent::from(agent_proto::MessageContent::from(text)),
            json,
            Answering::Stdin { yes },
            &mut interrupts,
        )
        .await;
        match exit {
            // The daemon went away, or a second Ctrl-C: the chat ends with it.
            Exit::Unreachable | Exit::Interrupted => return exit,
            // How one run ended was said on stderr; the chat goes on.
            Exit::Ok | Exit::Error | Exit::Cancelled | Exit::OtherReason => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines() {
        let cases = [
            ("hello\n", Line::Message("hello")),
            ("  spaced  \r\n", Line::Message("  spaced  ")),
            ("/quit\n", Line::Quit),
            (" /exit ", Line::Quit),
            ("\n", Line::Empty),
            ("   \n", Line::Empty),
        ];
        for (line, expected) in cases {
            assert_eq!(parse(line), expected, "{line:?}");
        }
    }
}
