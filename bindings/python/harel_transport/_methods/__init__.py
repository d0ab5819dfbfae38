"""`Transport`'s methods, one module per group, as better-sqlite3's lib/methods/: each a
class over the handle (`_handle._Handle`) that `_transport.Transport` is made of.

- `publish`: publish, publish_many;
- `claim`: claim, claim_many (the waits, and how they end), ack_and_claim,
  ack_and_claim_many, interrupt;
- `finish`: what ends or keeps a lease: ack, ack_many, nack, dead_letter, extend,
  keep_alive;
- `looks`: stats, groups, peek, dead_letters;
- `admin`: redrive, purge_dead, purge_group, purge, release;
- `transaction`: transaction, begin (publishing inside the application's transaction);
- `shards`: shard_count (a queue sharded over several databases: `Transport.open_shards`).
"""
