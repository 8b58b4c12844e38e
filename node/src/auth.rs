//! The cluster token: every call between the processes of a job carries
//! `authorization: Bearer <token>` when the job has one.

use retro_proto::TOKEN_METADATA;

/// A server-side interceptor that requires the cluster token on every call
/// (no check when the job has no token).
pub fn check_token(
    token: Option<String>,
) -> impl Fn(tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> + Clone {
    move |req: tonic::Request<()>| {
        let Some(expected) = &token else { return Ok(req) };
        let given = req.metadata().get(TOKEN_METADATA).and_then(|v| v.to_str().ok());
        let from = req.remote_addr().map_or_else(|| "an unknown address".to_string(), |a| a.to_string());
        match given.and_then(|g| g.strip_prefix("Bearer ")) {
            Some(g) if constant_time_eq(g.as_bytes(), expected.as_bytes()) => Ok(req),
            Some(_) => {
                tracing::warn!("refused a call from {from}: wrong cluster token");
                Err(tonic::Status::unauthenticated("wrong cluster token"))
            }
            None => {
                tracing::warn!("refused a call from {from}: no cluster token");
                Err(tonic::Status::unauthenticated(
                    "missing cluster token (set RETRO_TOKEN or the plan's [cluster] token)",
                ))
            }
        }
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
