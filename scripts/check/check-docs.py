#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Fails when a tracked file cites a file that is not in the repository.

What ships must stand alone: a user reading the installed docs or header, or a contributor
reading a comment, must be able to open every file it points at. In every tracked text
file this checks:

- repository paths, backticked or not: a word starting with one of the top-level folders
  (`docs/`, `Sources/`, `Tests/`, `scripts/`, `Include/`, `examples/`, ...) must name a
  file or folder of the working tree, or a program built from the C file of that name
  (`examples/device` from `examples/device.c`); placeholders such as `<name>`, `ARCH` or
  `*` are not paths and are skipped;
- markdown links `[text](target)` in `.md` files: a relative target (its `#anchor` cut)
  must exist, relative to the file that links it;
- relative paths (`../x/y`): they must resolve, from the file that holds them, to a file
  of the repository (`../shared/...` beside the checkout is not one);
- bare document names (`NAME.md` not preceded by a folder): they must exist beside the
  file that names them, at the top of the repository, or in `docs/`; so a document that
  lives outside the repository (such as the shared notes this project started from)
  cannot be cited by name;
- `make` targets: a backticked `make TARGET ...`, or a line of a fenced code block of a
  `.md` file that starts with `make TARGET`, must name a target of the Makefile (an
  explicit one or one a pattern rule makes, as `make -p` lists them);
- README.md's C example is `examples/minimal.c`, verbatim (the one that `make test`
  builds, so the README's cannot rot).

This file itself is not checked: its examples are the citations it refuses.

Usage: scripts/check/check-docs.py [FILE...]   (default: every file `git ls-files` lists)
Prints one line per bad citation (file:line: what) and exits 1 if there is any.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOP = ("docs", "Sources", "Tests", "scripts", "Include", "examples", "Benchmarks", "Fuzz",
       "contrib", "cmake", "packaging", ".ci")
# A path: one of the top-level folders, then path characters. It must not continue a
# longer path or word (build/lib/docs/... is not a repository path).
PATH = re.compile(r"(?<![\w./$-])((?:%s)/[\w.+/-]*)" % "|".join(re.escape(t) for t in TOP))
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
UPWARD = re.compile(r"(?<![\w./-])((?:\.\./)+[\w.+-]+(?:/[\w.+-]+)*)")
BARE_MD = re.compile(r"(?<![\w./-])([\w-]+\.md)\b")
PLACEHOLDER = re.compile(r"[<>*${}]|\bARCH\b|\.\.\.")
SELF = "scripts/check/check-docs.py"
BINARY = (".png", ".jpg", ".gif", ".a", ".o", ".so", ".bin", ".gz")


def tracked():
    out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], check=True,
                         capture_output=True).stdout.decode()
    return [f for f in out.split("\0") if f]


def exists(path):
    return os.path.exists(os.path.join(ROOT, path))


def is_placeholder(text):
    return bool(PLACEHOLDER.search(text))


MAKE_TICKED = re.compile(r"`make ([A-Za-z0-9][\w.%-]*)[^`]*`")
MAKE_BLOCK = re.compile(r"^\s*(?:\$ )?make ([A-Za-z0-9][\w.%-]*)")


def make_targets():
    """The Makefile's targets: explicit names, and pattern rules as regular expressions."""
    out = subprocess.run(["make", "-C", ROOT, "-pRrq", "-f", "Makefile", ":"],
                         capture_output=True, text=True).stdout
    names, patterns = set(), []
    rule = re.compile(r"^([A-Za-z0-9%][^\s:=#]*(?: [^\s:=#]+)*):(?!=)")
    for line in out.splitlines():
        match = rule.match(line)
        if not match:
            continue
        for target in match.group(1).split():
            if "%" in target:
                patterns.append(re.compile("^" + re.escape(target).replace("%", ".+") + "$"))
            else:
                names.add(target)
    return names, patterns


TARGETS = None


def is_target(word):
    global TARGETS
    if TARGETS is None:
        TARGETS = make_targets()
    names, patterns = TARGETS
    return word in names or any(p.match(word) for p in patterns)


def check_make(name, number, line, in_block, problems):
    found = [m.group(1) for m in MAKE_TICKED.finditer(line)]
    if in_block and name.endswith(".md"):
        match = MAKE_BLOCK.match(line)
        if match:
            found.append(match.group(1))
    for target in found:
        if "=" in target or is_placeholder(target):
            continue
        if not is_target(target):
            problems.append(f"{name}:{number}: names `make {target}`, which is not a target")


def check_readme_example(problems):
    """README.md's C example must be examples/minimal.c to the letter."""
    readme = os.path.join(ROOT, "README.md")
    example = os.path.join(ROOT, "examples/minimal.c")
    if not (os.path.exists(readme) and os.path.exists(example)):
        return
    blocks = re.findall(r"```c\n(.*?)```", open(readme, encoding="utf-8").read(), re.S)
    with open(example, encoding="utf-8") as handle:
        wanted = handle.read()
    if wanted not in blocks:
        problems.append("README.md: its C example is not examples/minimal.c to the letter")


def check_line(name, number, line, problems):
    here = os.path.dirname(name)
    for match in PATH.finditer(line):
        path = match.group(1).rstrip(".,:;/")
        # "Tests/c/test_x.c" and "scripts/x.sh" are files; "Sources/Tether/Rtm/" a folder.
        if is_placeholder(line[match.start():match.end() + 1]) or path.endswith("-"):
            continue
        if not exists(path) and not exists(path + ".c"):
            problems.append(f"{name}:{number}: cites {path}, which is not in the repository")
    for match in UPWARD.finditer(line):
        path = match.group(1).rstrip(".,:;")
        resolved = os.path.normpath(os.path.join(here, path))
        if resolved.startswith("..") or not exists(resolved):
            problems.append(f"{name}:{number}: cites {path}, which is not in the repository")
    if name.endswith(".md"):
        for match in LINK.finditer(line):
            target = match.group(1).split("#", 1)[0]
            if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target) or is_placeholder(target):
                continue
            resolved = os.path.normpath(os.path.join(here, target))
            if resolved.startswith("..") or not exists(resolved):
                problems.append(f"{name}:{number}: links to {target}, which is not in the repository")
    for match in BARE_MD.finditer(line):
        document = match.group(1)
        if not any(exists(p) for p in (os.path.join(here, document), document, "docs/" + document)):
            problems.append(f"{name}:{number}: names {document}, which is not beside it, at the top or in docs/")


def main(files):
    problems = []
    checked = 0
    for name in files or tracked():
        if name.endswith(BINARY) or name.startswith("Fuzz/") and "/corpus" in name or \
                name == SELF:
            continue
        try:
            with open(os.path.join(ROOT, name), encoding="utf-8") as handle:
                lines = handle.readlines()
        except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
            continue
        checked += 1
        in_block = False
        for number, line in enumerate(lines, 1):
            if line.lstrip().startswith("```"):
                in_block = not in_block
            check_line(name, number, line, problems)
            check_make(name, number, line, in_block, problems)
    if not files:
        check_readme_example(problems)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"check-docs: {len(problems)} citations of files or targets that do not exist",
              file=sys.stderr)
        return 1
    print(f"check-docs: {checked} tracked files cite only files and make targets that exist")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
