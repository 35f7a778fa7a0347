#!/usr/bin/env python3
"""Fails when a function of Include/tether.h is not documented in the header's one layout.

Each function declaration must follow its own comment block that, in this order:
starts with the function's name and a colon (what it does); has one `@param NAME` line per
parameter, named as in the declaration and in the declaration's order; has an `@return`
line; and says from which thread it may be called (`Thread:`).

Usage: scripts/check-header-docs.py [HEADER]   (default: Include/tether.h)
"""
import re
import sys

DECLARATION = re.compile(
    r"/\*((?:(?!\*/).)*)\*/\s*\n"                     # the comment block just above
    r"((?:const )?[a-z_0-9]+ \*?(tether_[a-z0-9_]+)\(([^)]*)\);)", re.S)
ANY_DECLARATION = re.compile(r"^(?:const )?[a-z_0-9]+ \*?(tether_[a-z0-9_]+)\(", re.M)


def parameters(text):
    text = " ".join(text.split())
    if text in ("void", ""):
        return []
    names = []
    for part in text.split(","):
        match = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*$", part.strip())
        names.append(match.group(1) if match else "?")
    return names


def problems_of(name, body, params):
    problems = []
    if not body.lstrip().startswith(name + ":"):
        problems.append("the block does not start with its name and a colon")
    documented = re.findall(r"@param\s+([A-Za-z_][A-Za-z0-9_]*)", body)
    if documented != params:
        problems.append(f"@param lines {documented} are not the parameters {params}, in order")
    positions = [body.find(word) for word in ("@return", "Thread:")]
    if -1 in positions:
        problems.append("no @return line" if positions[0] == -1 else "no Thread: line")
    elif documented and body.rfind("@param") > positions[0]:
        problems.append("an @param line after @return")
    elif positions[0] > positions[1]:
        problems.append("Thread: before @return")
    return problems


def main(path):
    text = open(path, encoding="utf-8").read()
    documented = {}
    for match in DECLARATION.finditer(text):
        body, _, name, params = match.groups()
        documented[name] = problems_of(name, body, parameters(params))
    failures = []
    declared = ANY_DECLARATION.findall(text)
    for name in declared:
        if name not in documented:
            failures.append(f"{path}: {name}: no comment block right above its declaration")
        for problem in documented.get(name, []):
            failures.append(f"{path}: {name}: {problem}")
    for failure in failures:
        print(failure, file=sys.stderr)
    if failures or not declared:
        print(f"check-header-docs: {len(failures)} functions of {path} break the layout",
              file=sys.stderr)
        return 1
    print(f"check-header-docs: the {len(declared)} functions of {path} are documented in one "
          "layout (name: what; @param each; @return; Thread)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "Include/tether.h"))
