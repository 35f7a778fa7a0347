#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Fails when the return codes of Include/tether.h are not one space that the library names.

tether.h: every function of both profiles returns 0 or a negative TETHER_ERR_* code whose
value means one condition wherever it appears, and tether_error_name and
tether_error_message know every value any function returns. So this fails when
- two return-code macros of the header (TETHER_OK and the TETHER_ERR_* ones) share a value,
  or one is not negative;
- a function's documented return codes (its `Returns 0 or:` list, scripts/check/check-header-docs.py)
  include a name that is not such a macro (a login result TETHER_RTM_LOGIN_ERR_*, say: what
  a callback reports, never returned);
- the library does not name a return code: tether_error_name(code) must be the macro's
  name without "TETHER_", and tether_error_message(code) not the fallback for an unknown
  code. The library is loaded with ctypes, as it ships (the Embedded build of make lib).

Usage: scripts/check/check-error-codes.py [LIBRARY [HEADER]]
       (default: build/lib/x86_64/libtether.so.0, Include/tether.h)
"""
import ctypes
import importlib.util
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("header_docs",
                                              os.path.join(HERE, "check-header-docs.py"))
header_docs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(header_docs)

RETURN_CODE = re.compile(r"^#define (TETHER_OK|TETHER_ERR_[A-Z0-9_]+) (-?[0-9]+)\b", re.M)


def main(library, path):
    text = open(path, encoding="utf-8").read()
    failures = []
    codes = {}
    for name, value in RETURN_CODE.findall(text):
        value = int(value)
        for other, known in codes.items():
            if known == value:
                failures.append(f"{name} and {other} share the value {value}")
        if (name == "TETHER_OK") != (value == 0) or value > 0:
            failures.append(f"{name} is {value}: a return code is 0 (TETHER_OK) or negative")
        codes[name] = value
    documented = set()
    for function, (body, result, _) in header_docs.documented_functions(text).items():
        if result != "int":
            continue
        for code in header_docs.returned_codes(body)[0]:
            documented.add(code)
            if code not in codes:
                failures.append(f"{function} documents {code}, which is not a return-code "
                                "macro of the header")
    lib = ctypes.CDLL(library)
    for function in ("tether_error_name", "tether_error_message"):
        getattr(lib, function).restype = ctypes.c_char_p
        getattr(lib, function).argtypes = [ctypes.c_int]
    unknown = lib.tether_error_message(-999999)
    for name, value in sorted(codes.items(), key=lambda item: -item[1]):
        named = lib.tether_error_name(value).decode()
        if named != name[len("TETHER_"):]:
            failures.append(f"tether_error_name({value}) is {named!r}, not {name[7:]!r}")
        if lib.tether_error_message(value) == unknown:
            failures.append(f"tether_error_message({value}) does not know {name}")
    for failure in failures:
        print(f"check-error-codes: {failure}", file=sys.stderr)
    if failures:
        return 1
    print(f"check-error-codes: {len(codes)} return codes, one value each; the "
          f"{len(documented)} that functions document are all of them macros, and "
          f"{os.path.basename(library)} names every one")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "build/lib/x86_64/libtether.so.0",
                  sys.argv[2] if len(sys.argv) > 2 else "Include/tether.h"))
