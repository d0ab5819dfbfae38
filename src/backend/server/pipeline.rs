//! One HTTP request to a libSQL server, the only way the library talks to one: a Hrana
//! pipeline (`POST {url}/v3/pipeline`, JSON) of one batch. A write's batch ends in COMMIT
//! or ROLLBACK (batch.rs), so between requests the stream holds no transaction, and the
//! next request goes on the same stream with the baton the server gave back: opening a
//! stream opens a database connection on the server, which costs more than the batch. A
//! stream that expired (10 s idle) or that a restarted server no longer knows is refused
//! (HTTP 400) before anything of the batch runs, and the batch is sent again on a new
//! stream. Values travel as the Hrana protocol's typed arguments (libsql-hrana's types,
//! serialized by serde), never spliced into SQL.
//!
//! The HTTP client is hyper 0.14 over hyper-rustls with the system's roots, as libsql's own
//! remote client.

use std::sync::Mutex;
use std::time::Duration;

use hyper::client::HttpConnector;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE};
use hyper::{Body, Client, Request, StatusCode};
use hyper_rustls::HttpsConnector;
use libsql_hrana::proto::{
    Batch, BatchResult, BatchStreamReq, PipelineReqBody, PipelineRespBody, StreamRequest, StreamResponse, StreamResult,
};

/// Idle pooled connections are dropped before a server or a load balancer would close
/// them under a request that is already on its way.
const POOL_IDLE: Duration = Duration::from_secs(20);

/// Why a request brought back no batch result.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// The server could not be reached (refused, no route, TLS): nothing was sent.
    Unreached(String),
    /// The request was sent but its answer was lost (the connection broke, the body was
    /// cut or unreadable): the batch may have run, COMMIT included.
    AnswerLost(String),
    /// The server answered with an HTTP error (401 for a refused token, ...).
    Status(u16, String),
    /// The server could not run the batch at all (a Hrana stream error).
    Stream { code: String, message: String },
}

pub struct Pipeline {
    client: Client<HttpsConnector<HttpConnector>, Body>,
    url: String,
    auth: String,
    /// The stream the last request left open, if its answer came back whole.
    stream: Mutex<Option<Stream>>,
}

/// A server-side stream to send the next batch on: its baton, and where (a server may
/// name its own `base_url`).
#[derive(Clone)]
struct Stream {
    baton: String,
    url: String,
}

impl Pipeline {
    /// A client of the server at `url` (`libsql://` is `https://`), sending `token`.
    pub fn new(url: &str, token: &str) -> Result<Pipeline, String> {
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_native_roots()
            .map_err(|e| format!("no TLS roots for the libSQL server: {e}"))?
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        let client = Client::builder().pool_idle_timeout(POOL_IDLE).build(https);
        let (url, auth) = (pipeline_url(url), format!("Bearer {token}"));
        Ok(Pipeline { client, url, auth, stream: Mutex::new(None) })
    }

    /// Runs `batch`, in one request: on the stream the last request left, or on a new one
    /// if that one is gone.
    pub async fn run(&self, batch: Batch) -> Result<BatchResult, Failure> {
        let kept = self.stream.lock().unwrap_or_else(|e| e.into_inner()).take();
        match self.send(batch.clone(), kept.as_ref()).await {
            Err(Failure::Status(400, body)) if kept.is_some() && is_gone_stream(&body) => self.send(batch, None).await,
            other => other,
        }
    }

    /// Runs `batch` on the stream the last request left, never on a new one: an open
    /// transaction lives on that stream alone. A stream that is gone took its transaction
    /// with it (the server rolled it back).
    pub async fn run_on_stream(&self, batch: Batch) -> Result<BatchResult, Failure> {
        let kept = self.stream.lock().unwrap_or_else(|e| e.into_inner()).take();
        let gone = || Failure::Stream {
            code: "STREAM_EXPIRED".into(),
            message: "the stream of the open transaction is gone".into(),
        };
        match kept {
            None => Err(gone()),
            Some(stream) => match self.send(batch, Some(&stream)).await {
                Err(Failure::Status(400, body)) if is_gone_stream(&body) => Err(gone()),
                other => other,
            },
        }
    }

    async fn send(&self, batch: Batch, stream: Option<&Stream>) -> Result<BatchResult, Failure> {
        let url = stream.map_or(self.url.as_str(), |s| s.url.as_str());
        let request = Request::post(url)
            .header(AUTHORIZATION, &self.auth)
            .header(CONTENT_TYPE, "application/json")
            .body(Body::from(request_body(batch, stream.map(|s| s.baton.clone()))))
            .map_err(|e| Failure::Unreached(format!("the request could not be made: {e}")))?;
        let response = self.client.request(request).await.map_err(|e| {
            if e.is_connect() {
                Failure::Unreached(e.to_string())
            } else {
                Failure::AnswerLost(e.to_string())
            }
        })?;
        let status = response.status();
        let body = hyper::body::to_bytes(response.into_body()).await.map_err(|e| Failure::AnswerLost(e.to_string()));
        if status != StatusCode::OK {
            let text = body.map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
            return Err(Failure::Status(status.as_u16(), text));
        }
        let (result, next) = batch_result(&body?)?;
        *self.stream.lock().unwrap_or_else(|e| e.into_inner()) = next.map(|(baton, base_url)| Stream {
            baton,
            url: base_url.map_or_else(|| self.url.clone(), |u| pipeline_url(&u)),
        });
        result
    }
}

/// sqld's answer when a baton's stream is gone: it expired, or the server restarted.
fn is_gone_stream(body: &str) -> bool {
    body.contains("STREAM_EXPIRED") || body.contains("baton") || body.contains("Baton")
}

/// `{base}/v3/pipeline`, keeping a query string (`?tls=0`, a namespace) at the end.
fn pipeline_url(url: &str) -> String {
    let url = url.strip_prefix("libsql://").map_or_else(|| url.to_owned(), |rest| format!("https://{rest}"));
    let (base, query) = url.split_at(url.find('?').unwrap_or(url.len()));
    format!("{}/v3/pipeline{query}", base.trim_end_matches('/'))
}

/// The pipeline: the batch, on the stream of `baton` (None: a new stream).
pub fn request_body(batch: Batch, baton: Option<String>) -> String {
    let body = PipelineReqBody { baton, requests: vec![StreamRequest::Batch(BatchStreamReq { batch })] };
    serde_json::to_string(&body).expect("Hrana requests serialize")
}

/// The stream to go on with: its baton and the server's `base_url`, if it gave one.
type Next = Option<(String, Option<String>)>;

/// The batch's result from the pipeline's answer, and the stream to go on with.
pub fn batch_result(body: &[u8]) -> Result<(Result<BatchResult, Failure>, Next), Failure> {
    let unreadable =
        |what: String| Failure::AnswerLost(format!("the libSQL server's answer could not be read: {what}"));
    let answer: PipelineRespBody = serde_json::from_slice(body).map_err(|e| unreadable(e.to_string()))?;
    let next = answer.baton.map(|baton| (baton, answer.base_url));
    let result = match answer.results.into_iter().next() {
        Some(StreamResult::Ok { response: StreamResponse::Batch(batch) }) => Ok(batch.result),
        Some(StreamResult::Error { error }) => Err(Failure::Stream { code: error.code, message: error.message }),
        other => Err(unreadable(format!("no batch result but {other:?}"))),
    };
    Ok((result, next))
}

#[cfg(test)]
mod tests {
    use super::*;
    use libsql_hrana::proto::{BatchStep, Stmt, Value};

    #[test]
    fn the_url_is_the_pipeline_of_the_server() {
        assert_eq!(pipeline_url("http://127.0.0.1:8080"), "http://127.0.0.1:8080/v3/pipeline");
        assert_eq!(pipeline_url("http://h:1/"), "http://h:1/v3/pipeline");
        assert_eq!(pipeline_url("libsql://db.example.io"), "https://db.example.io/v3/pipeline");
        assert_eq!(pipeline_url("https://db.example.io/?tls=1"), "https://db.example.io/v3/pipeline?tls=1");
    }

    #[test]
    fn the_body_is_one_batch_on_the_stream_of_its_baton() {
        let mut stmt = Stmt::new("SELECT ?1, ?2, ?3, ?4, ?5", true);
        for value in [
            Value::Integer { value: i64::MIN },
            Value::Float { value: 0.1 + 0.2 },
            Value::Text { value: "a\0'\"\u{10FFFF}".into() },
            Value::Blob { value: vec![0u8, 255, 10].into() },
            Value::Null,
        ] {
            stmt.bind(value);
        }
        let batch = Batch { steps: vec![BatchStep { condition: None, stmt }], replication_index: None };
        let on_a_stream: serde_json::Value =
            serde_json::from_str(&request_body(batch.clone(), Some("b1".into()))).unwrap();
        assert_eq!(on_a_stream["baton"], "b1");
        let body = request_body(batch, None);
        let parsed: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(parsed["baton"], serde_json::Value::Null, "a new stream");
        let requests = parsed["requests"].as_array().unwrap();
        assert_eq!((requests.len(), &requests[0]["type"]), (1, &"batch".into()), "the stream stays open for the next");
        let args = &requests[0]["batch"]["steps"][0]["stmt"]["args"];
        assert_eq!(args[0], serde_json::json!({"type": "integer", "value": "-9223372036854775808"}));
        assert_eq!(args[1]["value"].as_f64(), Some(0.1 + 0.2), "a float goes exactly");
        assert_eq!(args[2], serde_json::json!({"type": "text", "value": "a\0'\"\u{10FFFF}"}));
        assert_eq!(args[3], serde_json::json!({"type": "blob", "base64": "AP8K"}));
        assert_eq!(args[4], serde_json::json!({"type": "null"}));
    }

    #[test]
    fn an_answer_gives_the_batch_result_or_says_why_not() {
        let ok = br#"{"baton":"b2","base_url":"http://h:1","results":[
            {"type":"ok","response":{"type":"batch","result":{"step_results":[
                {"cols":[],"rows":[[{"type":"blob","base64":"AP8="}]],"affected_row_count":1,"last_insert_rowid":null}
            ],"step_errors":[null]}}}]}"#;
        let (result, next) = batch_result(ok).unwrap();
        assert_eq!(result.unwrap().step_results[0].as_ref().unwrap().affected_row_count, 1);
        assert_eq!(next, Some(("b2".into(), Some("http://h:1".into()))));
        let stream_error = br#"{"baton":null,"base_url":null,"results":[
            {"type":"error","error":{"message":"no","code":"PROTOCOL"}}]}"#;
        let (result, next) = batch_result(stream_error).unwrap();
        assert_eq!(result.err(), Some(Failure::Stream { code: "PROTOCOL".into(), message: "no".into() }));
        assert_eq!(next, None);
        assert!(is_gone_stream(r#"{"message":"The stream has expired due to inactivity","code":"STREAM_EXPIRED"}"#));
        assert!(is_gone_stream("Received an invalid baton"));
        assert!(!is_gone_stream("SQLITE_BUSY"));
        for lost in [&b"{\"results\": ["[..], b"{\"baton\":null,\"base_url\":null,\"results\":[]}"] {
            let unreadable = match batch_result(lost) {
                Err(failure) | Ok((Err(failure), _)) => failure,
                Ok((Ok(_), _)) => panic!("a result from {}", String::from_utf8_lossy(lost)),
            };
            assert!(matches!(unreadable, Failure::AnswerLost(_)), "{}", String::from_utf8_lossy(lost));
        }
    }
}
