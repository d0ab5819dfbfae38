"""The queue of issue 25, made and used by harel 0.9's own SqliteTransport, for mod.rs here:

    python queue.py publish DATABASE   # 30 messages in groups g0..g9 (a harel 0.9 file)
    python queue.py claim DATABASE     # g0 leased to w1, g1 to w2, g2 parked, each 600 s

Run as two processes, as the issue's operator did; prints the claimed groups.
"""

import sys

from harel.engine.transport import SqliteTransport
from harel.spec.states import Event


def main() -> None:
    step, database = sys.argv[1], sys.argv[2]
    transport = SqliteTransport(database)
    try:
        if step == "publish":
            for n in range(30):
                transport.publish(f"g{n % 10}", Event(id=f"e{n}", kind="tick", data={"n": n}), 0)
        elif step == "claim":
            leases = [transport.claim("w1", 600), transport.claim("w2", 600), transport.claim("w3", 600)]
            transport.nack(leases[2], delay=600)
            print(" ".join(lease.group_id for lease in leases))
        else:
            raise ValueError(f"unknown step {step!r}")
    finally:
        transport.close()


if __name__ == "__main__":
    main()
