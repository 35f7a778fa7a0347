#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Fails when a function of Include/tether.h is not documented in the header's one layout.

Each function declaration must follow its own comment block that, in this order:
starts with the function's name and a colon (what it does); has one `@param NAME` line per
parameter, named as in the declaration and in the declaration's order; says what it
returns in a line that starts with `Returns`; and says from which thread it may be called
(`Thread:`). A function declared to return `int` returns 0 or a negative code: its line is
exactly `Returns 0 or:`, followed by one line per code, each starting with a
`TETHER_ERR_*` name and its cause (a cause may go on over indented lines), each code once,
up to the `Thread:` line. scripts/check/check-error-codes.py checks the codes themselves.

Usage: scripts/check/check-header-docs.py [HEADER]   (default: Include/tether.h)
"""
import re
import sys

DECLARATION = re.compile(
    r"/\*((?:(?!\*/).)*)\*/\s*\n"                     # the comment block just above
    r"(((?:const )?[a-z_0-9]+) \*?(tether_[a-z0-9_]+)\(([^)]*)\);)", re.S)
ANY_DECLARATION = re.compile(r"^(?:const )?[a-z_0-9]+ \*?(tether_[a-z0-9_]+)\(", re.M)
CODE_LINE = re.compile(r"^(\s+)(TETHER_ERR_[A-Z0-9_]+)\s+\S")


def parameters(text):
    text = " ".join(text.split())
    if text in ("void", ""):
        return []
    names = []
    for part in text.split(","):
        match = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*$", part.strip())
        names.append(match.group(1) if match else "?")
    return names


def returned_codes(body):
    """The codes listed under `Returns 0 or:`, and what is wrong with the list."""
    lines = body.split("\n")
    start = next((i for i, line in enumerate(lines) if line.strip() == "Returns 0 or:"), None)
    if start is None:
        return [], ["a function returning int has no `Returns 0 or:` line"]
    codes, problems, indent = [], [], None
    for line in lines[start + 1:]:
        if line.strip().startswith("Thread:"):
            break
        match = CODE_LINE.match(line)
        if match and (indent is None or len(match.group(1)) == indent):
            indent = len(match.group(1))
            codes.append(match.group(2))
        elif indent is None or len(line) - len(line.lstrip()) <= indent:
            problems.append(f"`{line.strip()}` under `Returns 0 or:` is neither a code line "
                            "nor the indented rest of one")
    if not codes:
        problems.append("no code under `Returns 0 or:`")
    repeated = sorted({code for code in codes if codes.count(code) > 1})
    if repeated:
        problems.append(f"codes listed twice: {repeated}")
    return codes, problems


def problems_of(name, body, result, params):
    problems = []
    if not body.lstrip().startswith(name + ":"):
        problems.append("the block does not start with its name and a colon")
    documented = re.findall(r"@param\s+([A-Za-z_][A-Za-z0-9_]*)", body)
    if documented != params:
        problems.append(f"@param lines {documented} are not the parameters {params}, in order")
    returns = re.search(r"^\s*Returns\b", body, re.M)
    thread = body.find("Thread:")
    if returns is None or thread == -1:
        problems.append("no `Returns` line" if returns is None else "no Thread: line")
        return problems
    if documented and body.rfind("@param") > returns.start():
        problems.append("an @param line after the `Returns` line")
    if returns.start() > thread:
        problems.append("Thread: before the `Returns` line")
    if "@return" in body:
        problems.append("an `@return` line: the layout says `Returns`")
    if result == "int":
        problems += returned_codes(body)[1]
    elif "Returns 0 or:" in body:
        problems.append(f"`Returns 0 or:` over a function that returns {result}")
    return problems


def documented_functions(text):
    """name -> (comment block, result type, parameter names), for every documented one."""
    return {match.group(4): (match.group(1), match.group(3), parameters(match.group(5)))
            for match in DECLARATION.finditer(text)}


def main(path):
    text = open(path, encoding="utf-8").read()
    documented = documented_functions(text)
    failures = []
    declared = ANY_DECLARATION.findall(text)
    for name in declared:
        if name not in documented:
            failures.append(f"{path}: {name}: no comment block right above its declaration")
            continue
        body, result, params = documented[name]
        for problem in problems_of(name, body, result, params):
            failures.append(f"{path}: {name}: {problem}")
    for failure in failures:
        print(failure, file=sys.stderr)
    if failures or not declared:
        print(f"check-header-docs: {len(failures)} problems in the documentation of {path}",
              file=sys.stderr)
        return 1
    print(f"check-header-docs: the {len(declared)} functions of {path} are documented in one "
          "layout (name: what; @param each; Returns, `Returns 0 or:` and a line per code "
          "for int; Thread)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "Include/tether.h"))
