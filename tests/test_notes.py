"""The library's ``NOTE [title]`` comments and the references to them.

A long explanation lives once, as a ``# NOTE [title]`` comment (or a docstring opening with
``NOTE [title]``) in the module that owns the behaviour; other places point at it with
``NOTE [title] in path.py``. When code moves between modules (``_lowering/results.py`` and
``pycode.py`` were split out of ``region.py`` and ``pystate.py``) such a pointer goes stale
silently. This checks that every pointer in the library and the README names a file that
defines the note.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_DEF_COMMENT = re.compile(r"^[ \t]*#[ \t]*NOTE \[([^\]]+)\]", re.M)
_DEF_DOC = re.compile(r'^[ \t]*(?:[rub]?""")?NOTE \[([^\]]+)\]', re.M)
# a note opened inside a docstring's text: ``... NOTE [title]: the explanation``
_DEF_INLINE = re.compile(r"NOTE \[([^\]]+)\]\)?:")
_MENTION = re.compile(r"NOTE \[([^\]]+)\]")
# ``NOTE [a] in x.py``, ``NOTE [a] and [b] in x.py``, ``(NOTE [a]) in ``x.py``...
_REF = re.compile(r"NOTE \[([^\]]+)\](?:,? and \[[^\]]+\])?\)?,? in\s+(?:#\s*)?(?:``|`)?([\w/.]+\.py)")


def _title(text: str) -> str:
    """A title as written across wrapped comment lines, on one line."""
    text = re.sub(r'"\s+f?"', "", text)        # a message's title split over string literals
    return re.sub(r"\s+", " ", re.sub(r"\n\s*#", " ", text)).strip()


def note_definitions(files) -> dict:
    """``{title: {file, ...}}`` of the notes the files define."""
    out = {}
    for f in files:
        src = Path(f).read_text()
        for pattern in (_DEF_COMMENT, _DEF_DOC, _DEF_INLINE):
            for m in pattern.finditer(src):
                out.setdefault(_title(m.group(1)), set()).add(str(f))
    return out


def stale_references(files, definitions) -> list:
    """``file:line: ...`` for each ``NOTE [title] in path.py`` whose path defines no such note
    (a bare file name matches that file anywhere; a path must match its end)."""
    bad = []
    for f in files:
        src = Path(f).read_text()
        for m in _REF.finditer(src):
            title, path = _title(m.group(1)), m.group(2)
            where = definitions.get(title, set())
            ok = any(w.endswith(os.sep + path) or (os.sep not in path and "/" not in path
                                                    and os.path.basename(w) == path) for w in where)
            if not ok:
                line = src.count("\n", 0, m.start()) + 1
                bad.append(f"{f}:{line}: NOTE [{title}] in {path}; defined in {sorted(where) or 'no file'}")
    return bad


def undefined_notes(files, definitions) -> list:
    """``file:line: title`` of each note the files mention that no file defines."""
    out = []
    for f in files:
        src = Path(f).read_text()
        for m in _MENTION.finditer(src):
            if _title(m.group(1)) not in definitions:
                out.append(f"{f}:{src.count(chr(10), 0, m.start()) + 1}: {_title(m.group(1))}")
    return out


def test_every_note_mentioned_is_defined():
    library = sorted((ROOT / "tracegrad").rglob("*.py"))
    assert undefined_notes(library, note_definitions(library)) == []


def test_every_note_reference_names_the_file_that_defines_it():
    library = sorted((ROOT / "tracegrad").rglob("*.py"))
    definitions = note_definitions(library)
    assert len(definitions) > 100          # the scan found the notes at all
    assert stale_references(library + [ROOT / "README.md"], definitions) == []


def test_a_reference_to_the_wrong_file_is_reported(tmp_path):
    owner = tmp_path / "pkg" / "owner.py"
    owner.parent.mkdir()
    owner.write_text("# NOTE [wrapped\n# title]: why it is so\nx = 1\n")
    other = tmp_path / "pkg" / "other.py"
    other.write_text('"""NOTE [doc note]: in a docstring."""\n')
    user = tmp_path / "pkg" / "user.py"
    user.write_text("# see NOTE [wrapped title] in owner.py and NOTE [doc note] in pkg/other.py\n"
                    "# stale: NOTE [wrapped title] in other.py, NOTE [gone] in owner.py\n")
    files = [owner, other, user]
    defs = note_definitions(files)
    assert set(defs) == {"wrapped title", "doc note"}
    bad = stale_references(files, defs)
    assert [b.split(": ", 1)[1].split(";")[0] for b in bad] == [
        "NOTE [wrapped title] in other.py", "NOTE [gone] in owner.py"]
    assert all(b.startswith(f"{user}:2:") for b in bad)
    assert undefined_notes(files, defs) == [f"{user}:2: gone"]
