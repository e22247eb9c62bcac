//! The stdio transport of the test server, which can put on the wire what rmcp's typed
//! model cannot express (a tool without `inputSchema`, a content part of an unknown type,
//! a result without `content`): a result whose `_meta` holds [`RAW_KEY`] is sent as that
//! value instead. Everything else goes out exactly as rmcp's own codec writes it, one JSON
//! message per line. Reading is rmcp's own stdin transport.
//!
//! With `exit_after_list`, the process exits right after it has written its first
//! `tools/list` answer (a server that dies as soon as it is up).

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use serde_json::Value;
use tokio::io::AsyncWriteExt;

/// The `_meta` key whose value replaces the whole result on the wire.
pub(crate) const RAW_KEY: &str = "x-test-raw";

/// Exit code of `--exit-after-list`.
const EXIT_AFTER_LIST_CODE: i32 = 4;

pub(crate) struct RawStdio {
    input: AsyncRwTransport<RoleServer, tokio::io::Stdin, tokio::io::Sink>,
    output: Arc<tokio::sync::Mutex<tokio::io::Stdout>>,
    exit_after_list: bool,
}

impl RawStdio {
    pub(crate) fn new(exit_after_list: bool) -> RawStdio {
        RawStdio {
            input: AsyncRwTransport::new_server(tokio::io::stdin(), tokio::io::sink()),
            output: Arc::new(tokio::sync::Mutex::new(tokio::io::stdout())),
            exit_after_list,
        }
    }
}

/// Replaces a marked result by its raw value; says whether the message answers
/// `tools/list`.
fn unwrap_raw(message: &mut Value) -> bool {
    let Some(result) = message.get_mut("result") else {
        return false;
    };
    if let Some(raw) = result
        .get_mut("_meta")
        .and_then(|meta| meta.get_mut(RAW_KEY))
        .map(Value::take)
    {
        *result = raw;
    }
    result.get("tools").is_some()
}

impl Transport<RoleServer> for RawStdio {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let output = self.output.clone();
        let exit_after_list = self.exit_after_list;
        async move {
            let mut message = serde_json::to_value(&item).map_err(std::io::Error::other)?;
            let listed = unwrap_raw(&mut message);
            let mut line = serde_json::to_vec(&message).map_err(std::io::Error::other)?;
            line.push(b'\n');
            let mut out = output.lock().await;
            out.write_all(&line).await?;
            out.flush().await?;
            if listed && exit_after_list {
                eprintln!("mcp-test-server: exiting after tools/list as asked");
                std::process::exit(EXIT_AFTER_LIST_CODE);
            }
            Ok(())
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleServer>>> + Send {
        self.input.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.input.close()
    }
}
