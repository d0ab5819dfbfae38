//! One HTTP request to a libSQL server: a Hrana pipeline (`POST {url}/v3/pipeline`, JSON)
//! of one batch and a close, without a baton. The server opens a stream (a connection of
//! its own) for it, runs the batch, closes the stream and answers, so nothing of the
//! request outlives it on the server: no stream to expire, no baton a restarted server
//! forgets. Values travel as the Hrana protocol's typed arguments (libsql-hrana's types,
//! serialized by serde), never spliced into SQL.
//!
//! The HTTP client is hyper 0.14 over hyper-rustls with the system's roots, as libsql's own
//! remote client.

use std::time::Duration;

use hyper::client::HttpConnector;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE};
use hyper::{Body, Client, Request, StatusCode};
use hyper_rustls::HttpsConnector;
use libsql_hrana::proto::{
    Batch, BatchResult, BatchStreamReq, CloseStreamReq, PipelineReqBody, PipelineRespBody, StreamRequest,
    StreamResponse, StreamResult,
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

pub struct HranaPipeline {
    client: Client<HttpsConnector<HttpConnector>, Body>,
    url: String,
    auth: String,
}

impl HranaPipeline {
    /// A client of the server at `url` (`libsql://` is `https://`), sending `token`.
    pub fn new(url: &str, token: &str) -> Result<HranaPipeline, String> {
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
        Ok(HranaPipeline { client, url: pipeline_url(url), auth: format!("Bearer {token}") })
    }

    /// Runs `batch` on a stream of its own, in one request.
    pub async fn run(&self, batch: Batch) -> Result<BatchResult, Failure> {
        let request = Request::post(&self.url)
            .header(AUTHORIZATION, &self.auth)
            .header(CONTENT_TYPE, "application/json")
            .body(Body::from(request_body(batch)))
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
        batch_result(&body?)
    }
}

/// `{base}/v3/pipeline`, keeping a query string (`?tls=0`, a namespace) at the end.
fn pipeline_url(url: &str) -> String {
    let url = url.strip_prefix("libsql://").map_or_else(|| url.to_owned(), |rest| format!("https://{rest}"));
    let (base, query) = url.split_at(url.find('?').unwrap_or(url.len()));
    format!("{}/v3/pipeline{query}", base.trim_end_matches('/'))
}

/// The pipeline: the batch, then the stream's close.
pub fn request_body(batch: Batch) -> String {
    let body = PipelineReqBody {
        baton: None,
        requests: vec![StreamRequest::Batch(BatchStreamReq { batch }), StreamRequest::Close(CloseStreamReq {})],
    };
    serde_json::to_string(&body).expect("Hrana requests serialize")
}

/// The batch's result from the pipeline's answer.
pub fn batch_result(body: &[u8]) -> Result<BatchResult, Failure> {
    let unreadable =
        |what: String| Failure::AnswerLost(format!("the libSQL server's answer could not be read: {what}"));
    let answer: PipelineRespBody = serde_json::from_slice(body).map_err(|e| unreadable(e.to_string()))?;
    match answer.results.into_iter().next() {
        Some(StreamResult::Ok { response: StreamResponse::Batch(batch) }) => Ok(batch.result),
        Some(StreamResult::Error { error }) => Err(Failure::Stream { code: error.code, message: error.message }),
        other => Err(unreadable(format!("no batch result but {other:?}"))),
    }
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
    fn the_body_is_one_batch_and_a_close_without_a_baton() {
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
        let body = request_body(Batch { steps: vec![BatchStep { condition: None, stmt }], replication_index: None });
        let parsed: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(parsed["baton"], serde_json::Value::Null);
        let requests = parsed["requests"].as_array().unwrap();
        assert_eq!((requests.len(), &requests[0]["type"], &requests[1]["type"]), (2, &"batch".into(), &"close".into()));
        let args = &requests[0]["batch"]["steps"][0]["stmt"]["args"];
        assert_eq!(args[0], serde_json::json!({"type": "integer", "value": "-9223372036854775808"}));
        assert_eq!(args[1]["value"].as_f64(), Some(0.1 + 0.2), "a float goes exactly");
        assert_eq!(args[2], serde_json::json!({"type": "text", "value": "a\0'\"\u{10FFFF}"}));
        assert_eq!(args[3], serde_json::json!({"type": "blob", "base64": "AP8K"}));
        assert_eq!(args[4], serde_json::json!({"type": "null"}));
    }

    #[test]
    fn an_answer_gives_the_batch_result_or_says_why_not() {
        let ok = br#"{"baton":null,"base_url":null,"results":[
            {"type":"ok","response":{"type":"batch","result":{"step_results":[
                {"cols":[],"rows":[[{"type":"blob","base64":"AP8="}]],"affected_row_count":1,"last_insert_rowid":null}
            ],"step_errors":[null]}}},
            {"type":"ok","response":{"type":"close"}}]}"#;
        let result = batch_result(ok).unwrap();
        assert_eq!(result.step_results[0].as_ref().unwrap().affected_row_count, 1);
        let stream_error = br#"{"baton":null,"base_url":null,"results":[
            {"type":"error","error":{"message":"no","code":"PROTOCOL"}},{"type":"ok","response":{"type":"close"}}]}"#;
        assert_eq!(
            batch_result(stream_error).err(),
            Some(Failure::Stream { code: "PROTOCOL".into(), message: "no".into() })
        );
        for lost in [&b"{\"results\": ["[..], b"{\"baton\":null,\"base_url\":null,\"results\":[]}"] {
            assert!(matches!(batch_result(lost), Err(Failure::AnswerLost(_))), "{}", String::from_utf8_lossy(lost));
        }
    }
}
