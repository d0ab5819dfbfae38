"""The package's version: the library's (Cargo.toml's), checked by `make wheel`."""

__version__ = "0.5.0"
