//! The WebSocket listener (`--listen`): who gets in (the token, the cookie, the origin),
//! the protocol over it (a run, replay after a reconnect, overload), TLS.

use std::time::Duration;

use agent_proto::Event;
use agent_proto::rpc::AgentRpcClient;
use agent_proto::websocket::{Target, WsConnectError, connect};
use agentd_testkit::daemon::{DaemonOptions, TestDaemon, openai_config_with};
use agentd_testkit::events::{collect_run, text_of};
use agentd_testkit::mock_model::{MockModel, Reply};
use agentd_testkit::send::SendByName;
use futures::StreamExt;

use crate::common::{bin, new_agent};

/// A daemon listening on a port of the system's choice too.
async fn start_listening(extra: &str) -> (MockModel, TestDaemon) {
    let mock = MockModel::start().await;
    let options = DaemonOptions {
        config_toml: openai_config_with(&mock.url(), extra),
        env: vec![("AGENTD_LISTEN".into(), "127.0.0.1:0".into())],
    };
    (mock, TestDaemon::start_with(bin(), options).await)
}

fn http() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

#[tokio::test]
async fn only_the_token_or_its_cookie_gets_in_and_other_origins_never() {
    let (_mock, daemon) = start_listening("").await;
    let origin = daemon.web_origin();
    let token = daemon.listen_token();
    let mode = std::os::unix::fs::MetadataExt::mode(
        &std::fs::metadata(daemon.data_dir().join("listen.token")).unwrap(),
    );
    assert_eq!(mode & 0o777, 0o600, "the token file is the user's only");
    assert_eq!(token.len(), 64);
    let http = http();
    let get = |path: &str| http.get(format!("{origin}{path}"));

    // Health needs nothing; everything else the token.
    let status = |r: reqwest::Response| r.status().as_u16();
    assert_eq!(status(get("/healthz").send().await.unwrap()), 200);
    assert_eq!(status(get("/readyz").send().await.unwrap()), 401);
    let wrong = format!("{}x", &token[..63]);
    assert_eq!(
        status(get("/readyz").bearer_auth(&wrong).send().await.unwrap()),
        401
    );
    assert_eq!(
        status(get("/readyz").bearer_auth(&token).send().await.unwrap()),
        200
    );
    assert_eq!(status(get("/session").send().await.unwrap()), 401);

    // Another origin's page: 403 even with the token.
    let foreign = get("/readyz")
        .bearer_auth(&token)
        .header("origin", "http://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(status(foreign), 403);
    let own = get("/readyz")
        .bearer_auth(&token)
        .header("origin", &origin)
        .send()
        .await
        .unwrap();
    assert_eq!(status(own), 200);

    // The browser's sign-in: a wrong token 401, the right one a cookie that is HttpOnly,
    // SameSite=Strict, and admits.
    assert_eq!(
        status(get(&format!("/?token={wrong}")).send().await.unwrap()),
        401
    );
    let signed_in = get(&format!("/?token={token}")).send().await.unwrap();
    assert_eq!(signed_in.status().as_u16(), 303);
    let cookie = signed_in.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    assert!(
        !cookie.contains(&token),
        "the cookie is not the token: {cookie}"
    );
    let pair = cookie.split(';').next().unwrap().to_owned();
    let with_cookie = get("/session")
        .header("cookie", &pair)
        .send()
        .await
        .unwrap();
    assert_eq!(status(with_cookie), 204);
    let form = http
        .post(format!("{origin}/login"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("token={wrong}"))
        .send()
        .await
        .unwrap();
    assert_eq!(status(form), 401);

    // The WebSocket: no token, a wrong one, another origin.
    let url = daemon.ws_url();
    let refused = connect(&Target::new(&url, ""), Default::default()).await;
    assert!(
        matches!(refused, Err(WsConnectError::Unauthorized { .. })),
        "{refused:?}"
    );
    let refused = connect(&Target::new(&url, &wrong), Default::default()).await;
    assert!(
        matches!(refused, Err(WsConnectError::Unauthorized { .. })),
        "{refused:?}"
    );
    let mut request =
        tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(
            url.as_str(),
        )
        .unwrap();
    request
        .headers_mut()
        .insert("authorization", format!("Bearer {token}").parse().unwrap());
    request
        .headers_mut()
        .insert("origin", "http://evil.example".parse().unwrap());
    let tcp = tokio::net::TcpStream::connect(origin.trim_start_matches("http://"))
        .await
        .unwrap();
    let refused = tokio_tungstenite::client_async(request, tcp).await;
    match refused {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            assert_eq!(response.status().as_u16(), 403)
        }
        other => panic!("a foreign origin's upgrade was not refused: {other:?}"),
    }
    // The page itself is public (it holds no secret).
    let page = get("/").send().await.unwrap();
    assert_eq!(page.status().as_u16(), 200);
    assert!(
        page.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
}

#[tokio::test]
async fn a_run_over_websocket_then_replay_after_a_reconnect() {
    let (mock, daemon) = start_listening("").await;
    let ws = daemon.ws_client().await;
    let agent = new_agent(&ws, "over the web").await;
    let mut sub = ws
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    mock.push(Reply::openai_text(&["Hello ", "from ", "the web"]));
    ws.send_plain(agent.id.clone(), "hi".into()).await.unwrap();
    let first: Vec<Event> = collect_run(&mut sub, Duration::from_secs(10)).await;
    assert_eq!(text_of(&first), "Hello from the web");
    let last_seen = first.last().unwrap().seq;
    drop(sub);
    drop(ws);

    // A run while the WebSocket client is away, driven over the Unix socket.
    let socket = daemon.client().await;
    let mut reference = socket
        .subscribe_events(Some(agent.id.clone()), Some(last_seen), None)
        .await
        .unwrap();
    mock.push(Reply::openai_text(&["missed"]));
    socket
        .send_plain(agent.id.clone(), "again".into())
        .await
        .unwrap();
    let missed = collect_run(&mut reference, Duration::from_secs(10)).await;
    assert_eq!(text_of(&missed), "missed");

    // Back over the WebSocket with sinceSeq: exactly what it missed, in order.
    let ws = daemon.ws_client().await;
    let mut sub = ws
        .subscribe_events(Some(agent.id.clone()), Some(last_seen), None)
        .await
        .unwrap();
    let replayed = collect_run(&mut sub, Duration::from_secs(10)).await;
    assert_eq!(replayed, missed);
    let history = ws
        .list_messages(agent.id.clone(), None, None, None)
        .await
        .unwrap();
    assert_eq!(
        history.messages.len(),
        4,
        "two turns, each a question and an answer"
    );
}

#[tokio::test]
async fn past_the_connection_limit_a_websocket_gets_overloaded_and_is_closed() {
    let (_mock, daemon) = start_listening("[limits]\nmax_connections = 1\n").await;
    // The one slot, taken over the socket (once the start-up probe's connection let go).
    let holder = agentd_testkit::wait::eventually(
        Duration::from_secs(10),
        "a socket client to get the only slot",
        async || {
            let client = daemon.client().await;
            match client.list_agents(None, None, None, None, None).await {
                Ok(_) => Ok(client),
                Err(e) => Err(e.to_string()),
            }
        },
    )
    .await;
    let target = Target::new(daemon.ws_url(), daemon.listen_token());
    let mut ws = agent_proto::websocket::open(&target).await.unwrap();
    let first = tokio::time::timeout(Duration::from_secs(10), ws.next())
        .await
        .expect("an answer in time")
        .expect("a frame")
        .expect("a good frame");
    let text = first.into_text().unwrap();
    let reply: serde_json::Value = serde_json::from_str(text.as_str()).unwrap();
    assert_eq!(reply["error"]["data"]["kind"], "overloaded", "{reply}");
    let closed = tokio::time::timeout(Duration::from_secs(10), ws.next())
        .await
        .expect("closed in time");
    assert!(
        matches!(
            closed,
            None | Some(Ok(tokio_tungstenite::tungstenite::Message::Close(_))) | Some(Err(_))
        ),
        "{closed:?}"
    );
    // The slot comes back: once the socket client leaves, the WebSocket gets in.
    drop(holder);
    agentd_testkit::wait::eventually(
        Duration::from_secs(10),
        "a WebSocket client to get the freed slot",
        async || match connect(&target, Default::default()).await {
            Ok(client) => client
                .list_agents(None, None, None, None, None)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        },
    )
    .await;
}

#[tokio::test]
async fn tls_with_its_own_certificate_and_no_clear_text_beyond_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let cert_file = dir.path().join("cert.pem");
    let key_file = dir.path().join("key.pem");
    std::fs::write(&cert_file, cert.cert.pem()).unwrap();
    std::fs::write(&key_file, cert.signing_key.serialize_pem()).unwrap();
    let extra = format!(
        "[listen]\ntls_cert = {:?}\ntls_key = {:?}\n",
        cert_file.display().to_string(),
        key_file.display().to_string()
    );
    let (mock, daemon) = start_listening(&extra).await;
    let origin = daemon.web_origin();
    assert!(origin.starts_with("https://"), "{origin}");
    let port = origin.rsplit(':').next().unwrap();
    let url = format!("wss://localhost:{port}/");

    // The system does not trust the certificate: refused, not passed.
    let untrusted = connect(
        &Target::new(&url, daemon.listen_token()),
        Default::default(),
    )
    .await;
    assert!(
        matches!(untrusted, Err(WsConnectError::Tls { .. })),
        "{untrusted:?}"
    );
    // With it as the CA: a full run over wss.
    let mut target = Target::new(&url, daemon.listen_token());
    target.ca_file = Some(cert_file.clone());
    let client = connect(&target, Default::default()).await.unwrap();
    let agent = new_agent(&client, "tls").await;
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    mock.push(Reply::openai_text(&["sealed"]));
    client
        .send_plain(agent.id.clone(), "hi".into())
        .await
        .unwrap();
    assert_eq!(
        text_of(&collect_run(&mut sub, Duration::from_secs(10)).await),
        "sealed"
    );

    // Beyond loopback without TLS: the daemon does not start, and says why.
    let refused = TestDaemon::try_start_with(
        bin(),
        DaemonOptions {
            config_toml: openai_config_with(&mock.url(), ""),
            env: vec![("AGENTD_LISTEN".into(), "0.0.0.0:0".into())],
        },
    )
    .await;
    let failure = refused
        .err()
        .expect("a clear-text listener beyond loopback is refused");
    assert!(failure.log.contains("insecure = true"), "{}", failure.log);
}

#[tokio::test]
async fn a_connection_that_never_finishes_its_request_is_closed() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (_mock, daemon) = start_listening("").await;
    let origin = daemon.web_origin();
    let address = origin.trim_start_matches("http://");
    // Half a request, and one with nothing at all: both closed by the header deadline
    // (10 s), not held for as long as the client likes.
    let mut half = tokio::net::TcpStream::connect(address).await.unwrap();
    half.write_all(b"GET /readyz HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    let mut silent = tokio::net::TcpStream::connect(address).await.unwrap();
    for stream in [&mut half, &mut silent] {
        let mut buf = [0u8; 64];
        let read = tokio::time::timeout(Duration::from_secs(30), stream.read(&mut buf))
            .await
            .expect("closed by the listener within 30 s");
        assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    }
    // The listener still answers.
    let health = http()
        .get(format!("{origin}/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status().as_u16(), 200);
}
