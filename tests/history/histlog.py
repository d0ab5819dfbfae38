"""What the Python clients of the history harness share: the log, in hist/record.go's
format (one JSON object a line, each line one write(2) on an O_APPEND descriptor, so a
line written before a SIGKILL is whole), and the command line cmd/run gives them."""

import argparse
import json
import os
import time


class Log:
    def __init__(self, path, client, lang):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.client, self.lang, self.n = client, lang, 0

    def write(self, rec):
        os.write(self.fd, (json.dumps(rec, separators=(",", ":")) + "\n").encode())

    def invoke(self, op, **args):
        i, self.n = self.n, self.n + 1
        self.write({"client": self.client, "lang": self.lang, "i": i, "type": "invoke", "op": op,
                    "at": time.time_ns(), **args})
        return i

    def complete(self, i, type_, **res):
        self.write({"client": self.client, "lang": self.lang, "i": i, "type": type_, "at": time.time_ns(), **res})


def parser():
    """The arguments every client takes; a client adds its own before parsing."""
    ap = argparse.ArgumentParser()
    for name in ("db", "log", "id"):
        ap.add_argument("-" + name, required=True)
    ap.add_argument("-seconds", type=float, default=10)
    ap.add_argument("-seed", type=int, default=0)
    ap.add_argument("-groups", type=int, default=10)
    ap.add_argument("-start", type=int, default=0)
    return ap
