//! Secrets the tool takes: from a file (its first line, the newline trimmed) or from an
//! environment variable, never from an argument, which every user of the machine sees (ps).

use std::path::Path;

/// The secret in `file` (which wins) under the name of its `flag`, else in `env`; None when
/// neither holds one. A file that cannot be read, or holds no secret, is an error.
pub fn read(file: Option<&Path>, flag: &str, env: &str) -> Result<Option<String>, String> {
    if let Some(path) = file {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{flag} {:?}: {e}", path.display()))?;
        let secret = text.lines().next().unwrap_or("").trim();
        if secret.is_empty() {
            return Err(format!("{flag} {:?}: the file holds no token", path.display()));
        }
        return Ok(Some(secret.to_owned()));
    }
    Ok(std::env::var(env).ok().map(|t| t.trim().to_owned()).filter(|t| !t.is_empty()))
}
