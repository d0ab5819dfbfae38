#!/usr/bin/env python3
"""The docs' links (`make test-docs`): every relative link and `#anchor` in README.md,
docs/*.md and bindings/*/README.md must resolve (the file exists; the anchor is the GitHub
slug of a heading of the target), and every `src/...` path those pages name must exist.
CHANGELOG.md is left out: it is history, and names what was there then.

    check_links.py [--root DIR]   check a tree (default: this repository)
    check_links.py --self-test    check this repository, then plant a broken link, a broken
                                  anchor and a missing src path in a copy of its pages and
                                  require each to be caught (so the checker cannot pass
                                  everything silently)

Each check prints "ok   NAME" or "FAIL NAME" with its problems as FILE:LINE: ...; the last
line is "test-docs: N passed, N failed", as the other suites end. Standard library only.
"""

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unicodedata
from urllib.parse import unquote

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
# [text](target "title") and ![alt](target); the target may be <...>.
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*(<[^>]*>|[^\s)]+)(?:\s+\"[^\"]*\")?\s*\)")
REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*(\S+)")
HTML_ATTR = re.compile(r"""<(?:a|img)\b[^>]*?\b(?:href|src)\s*=\s*["']([^"']+)["']""", re.I)
HTML_ID = re.compile(r"""<[a-z]+\b[^>]*?\b(?:id|name)\s*=\s*["']([^"']+)["']""", re.I)
# A src/ path: not the tail of a longer path (cli/src/..., bindings/node/src/... count as
# their own, not as the root's src/).
SRC_PATH = re.compile(r"(?<![\w./-])src/[\w./*-]*")
SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)


def pages(root):
    """The pages checked, relative to root, in a stable order."""
    found = ["README.md"] if os.path.isfile(os.path.join(root, "README.md")) else []
    found += sorted(os.path.relpath(p, root) for p in glob.glob(os.path.join(root, "docs", "*.md")))
    found += sorted(os.path.relpath(p, root) for p in glob.glob(os.path.join(root, "bindings", "*", "README.md")))
    return found


def prose_lines(text):
    """(line number, line, in a fenced block) for each line of a Markdown text."""
    fence = None
    for n, line in enumerate(text.split("\n"), 1):
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)[0] * len(m.group(1))
            yield n, line, True
        elif fence is not None:
            if line.strip().startswith(fence) and line.strip().strip(fence[0]) == "":
                fence = None
            yield n, line, True
        else:
            yield n, line, False


def slug(heading):
    """GitHub's anchor for a heading's text (github-slugger): the rendered text lowercased,
    punctuation dropped but for '-' and '_', each space a '-'."""
    text = INLINE_CODE.sub(lambda m: m.group(2), heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link: its text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.replace("*", "")  # emphasis
    text = text.strip().lower()
    kept = []
    for c in text:
        cat = unicodedata.category(c)
        if c in "-_ " or cat[0] in "LNM":
            kept.append("-" if c == " " else c)
    return "".join(kept)


def anchors(path, cache={}):
    """Every anchor a Markdown file offers: its headings' slugs (a repeated one gets -1, -2,
    ... as on GitHub) and explicit id/name attributes."""
    if path not in cache:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        found, seen = set(), {}
        for _, line, fenced in prose_lines(text):
            if fenced:
                continue
            found.update(HTML_ID.findall(line))
            m = HEADING.match(line)
            if m:
                s = slug(m.group(2))
                n = seen.get(s, 0)
                seen[s] = n + 1
                found.add(s if n == 0 else f"{s}-{n}")
        cache[path] = found
    return cache[path]


def links(line):
    """The link targets of one line of prose, outside inline code."""
    bare = INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line)
    targets = [m.group(1) for m in LINK.finditer(bare)]
    targets += HTML_ATTR.findall(bare)
    m = REF_DEF.match(bare)
    if m:
        targets.append(m.group(1))
    return [t[1:-1] if t.startswith("<") and t.endswith(">") else t for t in targets]


def check_page(root, page):
    """(links, anchors, src paths) checked in one page, and its problems."""
    path = os.path.join(root, page)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    here = os.path.dirname(path)
    problems, n_links, n_anchors, n_src = [], 0, 0, 0
    for n, line, fenced in prose_lines(text):
        for m in SRC_PATH.finditer(line):
            name = m.group(0).rstrip(".,:;")
            n_src += 1
            # The root's src/, or the page's own (bindings/node/README.md's src/poll.c).
            if not any(glob.glob(os.path.join(base, name)) for base in (root, here)):
                problems.append(f"{page}:{n}: names {name}, which does not exist")
        if fenced:
            continue
        for target in links(line):
            if SCHEME.match(target) or target.startswith("//"):
                continue  # not relative: http(s), mailto, ...
            file_part, _, anchor = target.partition("#")
            file_part = unquote(file_part)
            n_links += 1
            dest = os.path.normpath(os.path.join(here, file_part)) if file_part else path
            if file_part and not os.path.exists(dest):
                problems.append(f"{page}:{n}: link {target}: {file_part} does not exist")
                continue
            if not anchor:
                continue
            if not dest.endswith(".md") or os.path.isdir(dest):
                continue  # an anchor into code (#L10) or a folder: GitHub's, not a heading
            n_anchors += 1
            if unquote(anchor) not in anchors(dest):
                problems.append(
                    f"{page}:{n}: link {target}: no heading of {os.path.relpath(dest, root)} has the anchor #{anchor}"
                )
    return (n_links, n_anchors, n_src), problems


def check_tree(root):
    """Checks every page of the tree at root; returns the list of (name, problems)."""
    results = []
    for page in pages(root):
        counts, problems = check_page(root, page)
        name = f"{page}: {counts[0]} links, {counts[1]} anchors, {counts[2]} src paths"
        results.append((name, problems))
    if not results:
        results.append(("pages to check", [f"{root}: no README.md, docs/*.md or bindings/*/README.md"]))
    return results


def copy_pages(root, into):
    """A copy of root in which the checked pages are files of their own (to plant faults
    in) and everything else is a link to the original."""
    checked = set(pages(root))
    dirs = {os.path.dirname(p) for p in checked if os.path.dirname(p)}
    dirs |= {os.path.dirname(d) for d in dirs if os.path.dirname(d)}

    def mirror(rel):
        for name in os.listdir(os.path.join(root, rel) if rel else root):
            if name in (".git", "target", "build", "node_modules", ".venv"):
                continue
            r = os.path.join(rel, name) if rel else name
            src, dst = os.path.join(root, r), os.path.join(into, r)
            if r in checked:
                shutil.copyfile(src, dst)
            elif r in dirs:
                os.mkdir(dst)
                mirror(r)
            else:
                os.symlink(src, dst)

    mirror("")


def self_test(python):
    """Plants each kind of fault in a copy and requires the checker, run as a program, to
    fail naming it; the clean copy must pass."""
    results = []
    with tempfile.TemporaryDirectory(prefix="check_links.") as tmp:
        copy_pages(REPO, tmp)

        def run():
            p = subprocess.run([python, os.path.abspath(__file__), "--root", tmp],
                               capture_output=True, text=True, timeout=120)
            return p.returncode, p.stdout + p.stderr

        code, out = run()
        results.append(("self-test: the clean copy passes", [] if code == 0 else [out]))

        planted = [
            ("README.md", "[a broken link](docs/no-such-page.md)", "no-such-page.md does not exist"),
            ("docs/queue.md", "[a broken anchor](server.md#no-such-heading)", "has the anchor #no-such-heading"),
            ("docs/queue.md", "[a broken anchor here](#no-such-section)", "has the anchor #no-such-section"),
            ("bindings/go/README.md", "It lives in `src/no_such_module.rs`.", "names src/no_such_module.rs"),
            ("docs/server.md", "See src/no_such_folder/ for it.", "names src/no_such_folder/"),
        ]
        for page, text, _ in planted:
            with open(os.path.join(tmp, page), "a", encoding="utf-8") as f:
                f.write("\n" + text + "\n")
        code, out = run()
        results.append(("self-test: the copy with faults fails", [] if code != 0 else [out]))
        for page, text, says in planted:
            caught = [l for l in out.split("\n") if l.strip().startswith(page + ":") and says in l]
            results.append((f"self-test: caught in {page}: {text}", [] if caught else [out]))
        wrong = [l for l in out.split("\n") if re.match(r"\s+\S+:\d+: ", l)
                 and not any(says in l for _, _, says in planted)]
        results.append(("self-test: nothing but the planted faults reported", wrong))
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=REPO)
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    results = check_tree(os.path.abspath(args.root))
    if args.self_test:
        results += self_test(sys.executable)
    passed = failed = 0
    for name, problems in results:
        if problems:
            failed += 1
            print(f"FAIL {name}")
            for p in problems:
                print("  " + p.replace("\n", "\n  "))
        else:
            passed += 1
            print(f"ok   {name}")
    print(f"test-docs: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
