//! Where a queue lives, decided from the database string and the options at open.

use crate::options::Options;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Memory,
    File,
    Remote,
    Replica,
}

impl Mode {
    pub fn of(database: &str, options: &Options) -> Mode {
        let is_url = ["libsql://", "http://", "https://"].iter().any(|s| database.starts_with(s));
        match (is_url, &options.sync_url) {
            (true, _) => Mode::Remote,
            (false, Some(_)) => Mode::Replica,
            (false, None) if database == ":memory:" => Mode::Memory,
            (false, None) => Mode::File,
        }
    }
}
