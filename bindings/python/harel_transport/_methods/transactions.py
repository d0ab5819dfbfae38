"""Publishing inside the application's transaction: `transaction` (and `begin`, the same),
which hand out a `Transaction` (`_transaction`)."""

from __future__ import annotations

from .._handle import _Handle
from .._transaction import Transaction


class TransactionMethods(_Handle):
    """transaction, begin."""

    def transaction(self) -> Transaction:
        """Begins a `Transaction`: the application's statements and its messages on the
        queue's database, committed together or not at all. Nothing is sent, and no lock
        taken, before its first query or its commit::

            with queue.transaction() as tx:
                tx.execute("INSERT INTO orders (id) VALUES (?)", (order_id,))
                tx.publish(f"order-{order_id}", '{"kind": "created"}')

        The block's end commits (or rolls back after an exception). One transaction at a
        time per transport: inside it, publish with the transaction's `publish`."""
        return Transaction(self)

    def begin(self) -> Transaction:
        """The same as `transaction()` (the C ABI's and the Rust API's name), for a
        transaction ended by hand with `Transaction.commit` or `Transaction.rollback`."""
        return Transaction(self)
