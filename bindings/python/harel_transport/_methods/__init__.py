"""`Transport`'s methods, one module per group of the glossary (docs/architecture.md,
"Method groups"), as better-sqlite3's lib/methods/: each a class over the handle
(`_handle._Handle`, which opens and closes) that `_transport.Transport` is made of.

- `publish`: publish, publish_many, publish_with, publish_many_with;
- `claim`: claim, claim_many (the waits, and how they end), ack_and_claim,
  ack_and_claim_many, interrupt;
- `finish`: what ends or keeps a lease: ack, ack_many, nack, dead_letter, extend,
  keep_alive;
- `looks`: stats, groups, peek, dead_letters, archive, pauses, limits;
- `admin`: redrive, purge_dead, purge_group, purge, release, pause, resume, set_limit,
  remove_limit;
- `shards`: shard_count (a queue sharded over several databases: `Transport.open_shards`);
- `transactions`: transaction, begin (publishing inside the application's transaction);
- `metrics`: metrics.
"""
