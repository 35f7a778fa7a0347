#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""One member of libtether.a, cut from the library's relocatable object.

Usage: elf-member.py IN.o OUT.o KEEP-LIST

KEEP-LIST names, one a line, the sections this member holds. Every global symbol defined
in another section that this member refers to becomes an undefined reference (another
member defines it; the others go with their sections), and weak
definitions become global ones (an undefined reference to a weak symbol would not pull
the member that defines it out of the archive). The sections themselves are removed
afterwards with objcopy (scripts/build/build-lib.sh); this only rewrites the symbol table, in
place, for 32- and 64-bit little-endian ELF. Fails on a local symbol of another section
that this member still needs: it could not be reached from here.
"""
import struct
import sys

STB_LOCAL, STB_GLOBAL, STB_WEAK = 0, 1, 2
STT_SECTION, STT_FILE = 3, 4
SHT_SYMTAB, SHT_RELA, SHT_REL = 2, 4, 9
SHN_UNDEF, SHN_LORESERVE = 0, 0xFF00


def main(source, target, keep_list):
    with open(keep_list) as f:
        keep = {line.strip() for line in f if line.strip()}
    data = bytearray(open(source, "rb").read())
    if data[:4] != b"\x7fELF" or data[5] != 1:
        sys.exit(f"elf-member: {source}: not a little-endian ELF object")
    wide = data[4] == 2
    if wide:
        shoff, = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    else:
        shoff, = struct.unpack_from("<I", data, 0x20)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x2E)

    def section(i):
        base = shoff + i * shentsize
        if wide:
            name, kind, _, _, offset, size, link, info, _, entsize = struct.unpack_from(
                "<IIQQQQIIQQ", data, base)
        else:
            name, kind, _, _, offset, size, link, info, _, entsize = struct.unpack_from(
                "<IIIIIIIIII", data, base)
        return dict(name=name, kind=kind, offset=offset, size=size, link=link, info=info,
                    entsize=entsize)

    sections = [section(i) for i in range(shnum)]
    names = sections[shstrndx]

    def text(table, offset):
        start = table["offset"] + offset
        return data[start:data.index(b"\0", start)].decode()

    section_names = [text(names, s["name"]) for s in sections]
    removed = {i for i, n in enumerate(section_names)
               if i != 0 and n not in keep and sections[i]["kind"] not in
               (SHT_SYMTAB, SHT_RELA, SHT_REL) and n not in (".strtab", ".shstrtab", ".symtab")}
    # Relocation sections that stay: those of kept sections.
    kept_relocations = [s for i, s in enumerate(sections)
                        if s["kind"] in (SHT_RELA, SHT_REL) and s["info"] not in removed]

    symtab = next(s for s in sections if s["kind"] == SHT_SYMTAB)
    strtab = sections[symtab["link"]]
    count = symtab["size"] // symtab["entsize"]

    def symbol(i):
        base = symtab["offset"] + i * symtab["entsize"]
        if wide:
            name, info, other, shndx, value, size = struct.unpack_from("<IBBHQQ", data, base)
        else:
            name, value, size, info, other, shndx = struct.unpack_from("<IIIBBH", data, base)
        return base, name, info, other, shndx

    needed = set()
    for relocations in kept_relocations:
        entry = relocations["entsize"]
        for k in range(relocations["size"] // entry):
            at = relocations["offset"] + k * entry
            info, = struct.unpack_from("<Q" if wide else "<I", data, at + (8 if wide else 4))
            needed.add(info >> 32 if wide else info >> 8)

    for i in range(1, count):
        base, name, info, other, shndx = symbol(i)
        binding, kind = info >> 4, info & 0xF
        if shndx == SHN_UNDEF or shndx >= SHN_LORESERVE:
            continue
        if shndx in removed:
            if i not in needed:
                continue  # goes with its section
            if binding == STB_LOCAL:
                label = text(strtab, name) if kind != STT_SECTION else section_names[shndx]
                sys.exit(f"elf-member: {source}: {label} is local to section "
                         f"{section_names[shndx]}, which another member holds")
            # Defined elsewhere now: an undefined, global reference (visibility kept).
            info = (STB_GLOBAL << 4) | kind
            shndx, value, size = SHN_UNDEF, 0, 0
            if wide:
                struct.pack_into("<IBBHQQ", data, base, name, info, other, shndx, value, size)
            else:
                struct.pack_into("<IIIBBH", data, base, name, value, size, info, other, shndx)
        elif binding == STB_WEAK:
            data[base + (4 if wide else 12)] = (STB_GLOBAL << 4) | kind
    open(target, "wb").write(data)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
