"""The history harness's Python client: this library's own Python package (harel_transport,
ctypes on the C ABI) making random calls on the queue file, each logged as
tests/history/hist/record.go describes (lang "python"). Run with PYTHONPATH pointing at
bindings/python and HAREL_TRANSPORT_LIB at the library (cmd/run does), never in the same
process as harel's sqlite3 transports.

    python py_client.py -db FILE -log FILE -id ID -seconds S [-seed N] [-groups N]
"""

import json
import random
import time

from harel_transport import ConnectError, HarelError, Message, PanicError, Transport, UnknownStatusError

import histlog

UNKNOWN = (ConnectError, PanicError, UnknownStatusError)  # may have been applied


class Log(histlog.Log):
    def ok(self, i, **res):
        self.complete(i, "ok", **res)

    def error(self, i, e):
        self.complete(i, "info" if isinstance(e, UNKNOWN) else "fail", status=e.code, err=e.message)


def event(eid):
    return json.dumps({"kind": "h", "id": eid, "data": {}})


def eid_of(lease):
    return json.loads(lease.event).get("id", "")


def ref(lease):
    return {"s": lease.seq, "g": lease.group_id, "w": lease.worker_id, "e": eid_of(lease)}


def got(leases):
    return [{"s": l.seq, "g": l.group_id, "e": eid_of(l), "w": l.worker_id, "exp": l.lock_expiry, "att": l.attempts}
            for l in leases]


def outcomes(acked):
    return ["ok" if e is None else e.code for e in acked]


class Client:
    def __init__(self, a):
        self.a, self.id = a, a.id
        self.rng = random.Random(a.seed or None)
        self.t = Transport(a.db, busy_timeout=10.0)
        self.log = Log(a.log, a.id, "python")
        self.start = a.start / 1e9 if a.start else time.time()
        self.held, self.n, self.keys, self.txs = [], 0, 0, 0

    def group(self):
        return f"g{self.rng.randrange(self.a.groups)}"

    def eid(self):
        self.n += 1
        return f"{self.id}-e{self.n}"

    def vis(self):
        return self.rng.choice([0.25, 0.5, 1.0, 2.0])

    def call(self, op, fn, result=lambda r: {}, **args):
        i = self.log.invoke(op, **args)
        try:
            r = fn()
        except HarelError as e:
            self.log.error(i, e)
            return None, e
        self.log.ok(i, **result(r))
        return r, None

    def step(self):
        r = self.rng.random()
        if (not self.held and r < 0.35) or (self.held and r < 0.15):
            self.publish_some()
        elif not self.held or (len(self.held) < 4 and r < 0.4):
            self.claim_some()
        else:
            self.finish_some()

    def publish_some(self):
        r = self.rng.random()
        if r < 0.3:
            g, e = self.group(), self.eid()
            self.call("publish", lambda: self.t.publish(g, event(e)), msgs=[{"g": g, "e": e}])
        elif r < 0.6:
            if r < 0.45:
                self.keys += 1
                key, g, times = f"{self.id}-k{self.keys}", self.group(), 1 + self.rng.randrange(2)
            else:
                w = int(time.time() - self.start)
                key, g, times = f"shared-{w * 4 + self.rng.randrange(8)}", f"g{(w * 4 + self.rng.randrange(8)) % self.a.groups}", 1
            for _ in range(times):
                e = self.eid()
                self.call("publish", lambda: self.t.publish_with(g, event(e), key=key),
                          lambda p: {"pub": [{"s": p.seq, "dup": p.duplicate}]}, msgs=[{"g": g, "e": e, "k": key}])
        elif r < 0.75:
            msgs = [{"g": self.group(), "e": self.eid()} for _ in range(2 + self.rng.randrange(3))]
            if self.rng.randrange(3) == 0:
                for j, m in enumerate(msgs):
                    self.keys += 1
                    m["k"] = msgs[j - 1]["k"] if j and self.rng.randrange(3) == 0 else f"{self.id}-k{self.keys}"
                batch = [Message(m["g"], event(m["e"]), key=m["k"]) for m in msgs]
                self.call("publish_many", lambda: self.t.publish_many_with(batch),
                          lambda ps: {"pub": [{"s": p.seq, "dup": p.duplicate} for p in ps]}, msgs=msgs)
            else:
                batch = [Message(m["g"], event(m["e"])) for m in msgs]
                self.call("publish_many", lambda: self.t.publish_many(batch), msgs=msgs)
        else:
            self.transaction()

    def transaction(self):
        self.txs += 1
        tx_id = f"{self.id}-t{self.txs}"
        r = self.rng.random()
        mode = "rollback" if r < 0.15 else "fail" if r < 0.3 else "commit"
        msgs = [{"g": self.group(), "e": self.eid()} for _ in range(1 + self.rng.randrange(3))]
        read_first = self.rng.randrange(3) == 0

        def run():
            tx = self.t.begin()
            try:
                if read_first:
                    tx.query("SELECT count(*) FROM hist_app")
                tx.execute("INSERT INTO hist_app (id, client) VALUES (?, ?)", (tx_id, self.id))
                for m in msgs:
                    tx.publish(m["g"], event(m["e"]))
                if mode == "fail":
                    tx.execute("INSERT INTO hist_app (id, client) VALUES ('seed', ?)", (self.id,))
                if mode == "rollback":
                    tx.rollback()
                    return []
                return tx.commit()
            finally:
                if not tx.ended:
                    tx.rollback()

        self.call("tx", run, lambda ps: {"pub": [{"s": p.seq, "dup": p.duplicate} for p in ps]} if ps else {},
                  msgs=msgs, tx=tx_id, txmode=mode)

    def claim_some(self):
        v, r = self.vis(), self.rng.random()
        if r < 0.6:
            wait = 0.0 if r < 0.3 else self.rng.uniform(0.02, 0.2)
            res, _ = self.call("claim", lambda: [l for l in [self.t.claim(self.id, v, wait=wait)] if l],
                               lambda ls: {"got": got(ls)}, worker=self.id, vis=v, max=1)
        else:
            m = 1 + self.rng.randrange(4)
            res, _ = self.call("claim", lambda: self.t.claim_many(self.id, v, max=m, wait=self.rng.uniform(0, 0.06)),
                               lambda ls: {"got": got(ls)}, worker=self.id, vis=v, max=m)
        self.held.extend(res or [])

    def take(self, j):
        return self.held.pop(j)

    def finish_some(self):
        j, r = self.rng.randrange(len(self.held)), self.rng.random()
        if r < 0.35:
            self.ack(self.take(j))
        elif r < 0.45:
            ls, self.held = self.held, []
            self.call("ack_many", lambda: self.t.ack_many(ls), lambda acked: {"outcomes": outcomes(acked)},
                      leases=[ref(l) for l in ls])
        elif r < 0.55:
            l, v = self.take(j), self.vis()
            res, _ = self.call("ack_and_claim", lambda: [n for n in [self.t.ack_and_claim(l, self.id, v)] if n],
                               lambda ls: {"got": got(ls)}, leases=[ref(l)], worker=self.id, vis=v)
            self.held.extend(res or [])
        elif r < 0.6:
            ls, self.held, v, m = self.held, [], self.vis(), 1 + self.rng.randrange(3)
            res, _ = self.call("ack_and_claim_many", lambda: self.t.ack_and_claim_many(ls, self.id, v, max=m),
                               lambda res: {"outcomes": outcomes(res.acked), "got": got(res.leases)},
                               leases=[ref(l) for l in ls], worker=self.id, vis=v, max=m)
            self.held.extend(res.leases if res else [])
        elif r < 0.7:
            l = self.take(j)
            self.call("nack", lambda: self.t.nack(l), leases=[ref(l)])
        elif r < 0.78:
            l, d = self.take(j), self.rng.uniform(0.05, 0.3)
            self.call("nack", lambda: self.t.nack(l, d), leases=[ref(l)], delay=d)
        elif r < 0.88:
            l, v = self.held[j], self.vis()
            res, err = self.call("extend", lambda: self.t.extend(l, v), lambda n: {"exp": n.lock_expiry},
                                 leases=[ref(l)], vis=v)
            if err is None:
                self.held[j] = res
            else:
                self.take(j)
        elif r < 0.91:
            l = self.take(j)
            self.call("dead_letter", lambda: self.t.dead_letter(l, "history: dead-lettered on purpose"), leases=[ref(l)])
        elif r < 0.96:
            l = self.take(j)
            left = l.lock_expiry - time.time()
            if left < 0.4:
                time.sleep(max(0.0, left) + self.rng.uniform(0.03, 0.15))
            self.ack(l, stale=left < 0.4)
        else:
            self.take(j)  # abandoned: it lapses

    def ack(self, lease, stale=False):
        self.call("ack", lambda: self.t.ack(lease), leases=[ref(lease)], **({"stale": True} if stale else {}))


def main():
    a = histlog.parser().parse_args()
    c = Client(a)
    deadline = time.time() + a.seconds
    while time.time() < deadline:
        c.step()
        time.sleep(c.rng.uniform(0, 0.003))
    while c.held:
        c.ack(c.held.pop())
    c.t.close()


if __name__ == "__main__":
    main()
